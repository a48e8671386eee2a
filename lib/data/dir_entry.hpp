// Private: what a directory entry is, as the ImageFolder scan asks it
// (os.scandir's questions, answered from readdir's d_type and a stat only
// for links and file systems that do not fill d_type).
#pragma once

#include <dirent.h>

#include <string_view>

namespace ringfeed::data::detail {

/// A name starting with '.' (torchvision 0.14 keeps them; include_hidden).
bool is_hidden(std::string_view name);

/// "." or "..".
bool is_dot_or_dotdot(const char* name);

/// Whether the entry is a directory the way os.scandir's entry.is_dir()
/// (follow_symlinks=True) decides: d_type when it is definite, else stat;
/// a failing stat (broken symlink) means "not a directory".
bool entry_is_dir(int dir_fd, const dirent& e);

/// What a listed name that is no directory is, when it is neither a regular
/// file nor a dangling link (which fails at its read, naming the file): "a
/// FIFO (named pipe)", "a socket", "a character device", "a block device";
/// nullptr otherwise. A FIFO would block its read, and Ctrl-C, for ever; a
/// device reads without end.
const char* special_file(int dir_fd, const dirent& e);

}  // namespace ringfeed::data::detail
