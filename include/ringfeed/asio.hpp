// Kept for one release; include <ringfeed/loader/asio.hpp>.
#pragma once
#include <ringfeed/loader/asio.hpp>
