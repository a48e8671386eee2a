#include <ringfeed/image/decode.hpp>  // kept for one release; include <ringfeed/image/decode.hpp>
