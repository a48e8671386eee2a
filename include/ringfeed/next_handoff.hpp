// Kept for one release; include <ringfeed/loader/next_handoff.hpp>.
#pragma once
#include <ringfeed/loader/next_handoff.hpp>
