// io::source: the interface's out-of-line pieces. (source::open, which picks
// an implementation from the location, lands here with the source layer.)
#include <ringfeed/io/source.hpp>

namespace ringfeed::io {

source::~source() = default;

}  // namespace ringfeed::io
