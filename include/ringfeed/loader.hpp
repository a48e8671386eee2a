// Kept for one release; include <ringfeed/loader/loader.hpp>.
#pragma once
#include <ringfeed/loader/loader.hpp>
