// Kept for one release; include <ringfeed/loader/batch.hpp>.
#pragma once
#include <ringfeed/loader/batch.hpp>
