// See dir_entry.hpp.
#include "data/dir_entry.hpp"

#include <sys/stat.h>

namespace ringfeed::data::detail {

bool is_hidden(std::string_view name) { return !name.empty() && name.front() == '.'; }

bool is_dot_or_dotdot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

bool entry_is_dir(int dir_fd, const dirent& e) {
  if (e.d_type == DT_DIR) return true;
  if (e.d_type != DT_LNK && e.d_type != DT_UNKNOWN) return false;
  struct stat st {};
  return ::fstatat(dir_fd, e.d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

const char* special_file(int dir_fd, const dirent& e) {
  unsigned char type = e.d_type;
  if (type == DT_LNK || type == DT_UNKNOWN) {
    struct stat st {};
    if (::fstatat(dir_fd, e.d_name, &st, 0) != 0) return nullptr;
    type = S_ISREG(st.st_mode) ? DT_REG : S_ISFIFO(st.st_mode) ? DT_FIFO : S_ISSOCK(st.st_mode) ? DT_SOCK
                                        : S_ISCHR(st.st_mode) ? DT_CHR : S_ISBLK(st.st_mode) ? DT_BLK : DT_UNKNOWN;
  }
  switch (type) {
    case DT_FIFO: return "a FIFO (named pipe)";
    case DT_SOCK: return "a socket";
    case DT_CHR: return "a character device";
    case DT_BLK: return "a block device";
    default: return nullptr;
  }
}

}  // namespace ringfeed::data::detail
