/* msgpuck's implementation (its parser tables and the functions that are
 * not inlined), compiled once into the library. Debian's libmsgpuck.a is
 * built without -fPIC and so cannot go into libringfeed.so or the Python
 * module; msgpuck.h is a single-header library, so this is the supported
 * way to use it. */
#define MP_SOURCE 1
#include <msgpuck.h>
