#include <ringfeed/image/pipeline.hpp>  // kept for one release; include <ringfeed/image/pipeline.hpp>
