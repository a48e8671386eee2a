// Kept for one release; include <ringfeed/loader/stats.hpp>.
#pragma once
#include <ringfeed/loader/stats.hpp>
