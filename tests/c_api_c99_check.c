/* ringfeed.h compiled as strict C99 (-std=c99 -pedantic): the header uses
 * nothing newer. c_api_tests calls the function so the check is linked in. */
#include <ringfeed/ringfeed.h>

int rf_c99_header_check(void);

int rf_c99_header_check(void) {
  rf_state s = {0, 0, 0, 0, 1};
  const rf_dtype t = RF_FLOAT16;
  const rf_layout l = RF_NCHW;
  const rf_batch* none = NULL;
  int64_t shape[4];
  rf_batch_shape(none, shape);
  return sizeof s == 5 * sizeof(uint64_t) && t == 2 && l == 1 && rf_batch_size(none) == 0 && shape[0] == 0;
}
