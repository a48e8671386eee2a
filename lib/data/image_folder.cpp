// ImageFolder: torchvision 0.14's DatasetFolder order, scanned concurrently,
// with a cached index validated by directory inode + mtime.
//
// torchvision (datasets/folder.py, 0.14):
//   classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
//   for target_class in sorted(class_to_idx):
//     for root, _, fnames in sorted(os.walk(class_dir, followlinks=True)):
//       for fname in sorted(fnames):
//         if path.lower().endswith(IMG_EXTENSIONS): append (path, class_index)
// sorted(os.walk(...)) orders the walked directories by their path string
// (not depth-first): "c/a" < "c/a-b" < "c/a/x". os.walk puts an entry in
// `dirs` when entry.is_dir() (symlinks followed) and everything else,
// broken symlinks included, in `fnames`. We list each directory once with
// readdir's d_type (a stat only for DT_LNK and DT_UNKNOWN), remember every
// listed directory's path and sort the lists as Python would.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <system_error>

#include <ringfeed/text.hpp>

#include "data/data_detail.hpp"
#include "data/dir_entry.hpp"
#include "data/index_cache.hpp"

namespace ringfeed::data::detail {
namespace {

constexpr std::string_view folder_magic = "RFIFOLD1";
constexpr std::uint32_t folder_version = 2;  // 2: FIFOs and devices left out

// A directory whose listing is part of the index: path relative to the
// root ("" for the root itself) and what it looked like when listed.
struct dir_record {
  std::string rel;
  file_stamp stamp;
};

// The permutation that puts `names` in Python str order: bytes when every
// name is valid UTF-8 (the common case), else by python_sort_key.
std::vector<std::size_t> python_order(const std::vector<std::string>& names) {
  std::vector<std::size_t> order(names.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool all_valid = std::all_of(names.begin(), names.end(), [](const std::string& s) { return is_valid_utf8(s); });
  if (all_valid) {
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
    return order;
  }
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const auto& n : names) keys.push_back(python_sort_key(n));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  return order;
}

// Sorts names in Python str order.
void python_sort(std::vector<std::string>& names) {
  std::vector<std::string> sorted;
  sorted.reserve(names.size());
  for (const std::size_t i : python_order(names)) sorted.push_back(std::move(names[i]));
  names = std::move(sorted);
}

// A directory that cannot be opened or listed (EACCES, EIO): with
// options.skip_unreadable it is recorded in `skipped` and the caller leaves
// it out; else the scan stops with std::system_error naming it.
void refuse_directory(const dataset_options& options, std::vector<skipped_directory>& skipped, int err,
                      std::string_view what, const std::string& path) {
  if (!options.skip_unreadable) throw_errno(err, what, path);
  skipped.push_back({path, std::string(what) + ": " + std::generic_category().message(err)});
}

// Walks one class directory as os.walk(followlinks=True) would, collecting
// (sub-directory, sorted image names) lists.
class class_walker {
 public:
  class_walker(const std::string& root_display, const std::string& class_name, const dataset_options& options)
      : m_root(root_display), m_class(class_name), m_options(options) {}

  // Takes ownership of `fd`, the open class directory.
  void walk_class(int fd) { walk(unique_fd(fd), std::string()); }

  // Appends "class/sub/name" for every image, in torchvision's order.
  void emit(string_table& out) {
    // Python compares the whole root strings; they share the class prefix,
    // so comparing the part below it ("" for the class dir) is the same.
    std::vector<std::string> subs;
    subs.reserve(m_dirs.size());
    for (const auto& d : m_dirs) subs.push_back(d.sub);
    std::string path;
    for (const std::size_t i : python_order(subs)) {
      const listed_dir& d = m_dirs[i];
      for (const std::string& name : d.images) {
        path.assign(m_class);
        path.push_back('/');
        if (!d.sub.empty()) {
          path.append(d.sub);
          path.push_back('/');
        }
        path.append(name);
        out.push_back(path);
      }
    }
  }

  std::vector<dir_record>& records() { return m_records; }
  // Directories left out (options.skip_unreadable), sorted by path.
  std::vector<skipped_directory>& skipped() {
    std::sort(m_skipped.begin(), m_skipped.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    return m_skipped;
  }

 private:
  struct listed_dir {
    std::string sub;  // below the class directory, "" for itself
    std::vector<std::string> images;
  };

  std::string display(const std::string& sub) const {
    return m_root + "/" + m_class + (sub.empty() ? std::string() : "/" + sub);
  }

  void refuse(int err, std::string_view what, const std::string& sub) {
    refuse_directory(m_options, m_skipped, err, what, display(sub));
  }

  void walk(unique_fd fd, std::string sub) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
      refuse(errno, "cannot stat directory", sub);
      return;
    }
    const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    // A symlink back to a directory being walked: os.walk would descend until
    // ELOOP, listing the same files again at every level; we stop here.
    if (std::find(m_ancestors.begin(), m_ancestors.end(), id) != m_ancestors.end()) return;
    // Stamp before listing: a change made during the listing moves the mtime
    // past the recorded one, so the cached index is not trusted next time.
    const dir_record record{m_class + (sub.empty() ? std::string() : "/" + sub), stamp_of(st)};

    DIR* dir = ::fdopendir(fd.get());
    if (dir == nullptr) {
      refuse(errno, "cannot list directory", sub);
      return;
    }
    static_cast<void>(fd.release());  // now owned by `dir`
    struct dir_closer {
      DIR* d;
      ~dir_closer() { ::closedir(d); }
    } closer{dir};
    const int dfd = ::dirfd(dir);

    listed_dir listed{sub, {}};
    std::vector<std::string> subdirs;
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(dir);
      if (e == nullptr) {
        // A listing cut short is left out whole: no partial directory.
        if (errno != 0) {
          refuse(errno, "cannot list directory", sub);
          return;
        }
        break;
      }
      if (is_dot_or_dotdot(e->d_name)) continue;
      const std::string_view name = e->d_name;
      if (!m_options.include_hidden && is_hidden(name)) continue;
      if (entry_is_dir(dfd, *e)) {
        subdirs.emplace_back(name);
      } else if (has_image_extension(name)) {
        // torchvision lists it, and its read never ends: left out here.
        if (const char* what = special_file(dfd, *e)) {
          const std::string path = display(sub) + "/" + std::string(name);
          if (!m_options.skip_unreadable) throw dataset_error(path, std::string("not a regular file but ") + what);
          m_skipped.push_back({path, std::string("not a regular file but ") + what});
          continue;
        }
        listed.images.emplace_back(name);
      }
    }
    python_sort(listed.images);
    m_dirs.push_back(std::move(listed));
    m_records.push_back(record);

    m_ancestors.push_back(id);
    for (const std::string& name : subdirs) {
      const std::string child = sub.empty() ? name : sub + "/" + name;
      const int cfd = ::openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (cfd < 0) {
        refuse(errno, "cannot open directory", child);
        continue;
      }
      walk(unique_fd(cfd), child);
    }
    m_ancestors.pop_back();
  }

  const std::string& m_root;
  const std::string& m_class;
  const dataset_options& m_options;
  std::vector<std::pair<dev_t, ino_t>> m_ancestors;
  std::vector<listed_dir> m_dirs;
  std::vector<dir_record> m_records;
  std::vector<skipped_directory> m_skipped;
};

// What affects the result besides the tree: part of the cache key.
std::uint64_t options_fingerprint(const dataset_options& options) {
  std::string f = "include_hidden=" + std::to_string(options.include_hidden ? 1 : 0) + ";ext=";
  for (const auto ext : image_extensions()) f.append(ext);
  return hash_bytes(f);
}

struct scan_result {
  std::vector<std::string> classes;
  std::vector<std::uint64_t> counts;  // samples per class
  string_table names;
  std::vector<dir_record> dirs;
  std::vector<skipped_directory> skipped;  // options.skip_unreadable: left out, in class order
};

scan_result scan(const std::string& root, const dataset_options& options) {
  unique_fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) throw_errno(errno, "cannot open ImageFolder root", root);
  scan_result r;
  struct stat st {};
  if (::fstat(root_fd.get(), &st) != 0) throw_errno(errno, "cannot stat", root);
  r.dirs.push_back({"", stamp_of(st)});
  {
    DIR* dir = ::fdopendir(::dup(root_fd.get()));
    if (dir == nullptr) throw_errno(errno, "cannot list", root);
    struct dir_closer {
      DIR* d;
      ~dir_closer() { ::closedir(d); }
    } closer{dir};
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(dir);
      if (e == nullptr) {
        if (errno != 0) throw_errno(errno, "cannot list", root);
        break;
      }
      if (is_dot_or_dotdot(e->d_name)) continue;
      if (!options.include_hidden && is_hidden(e->d_name)) continue;
      if (entry_is_dir(::dirfd(dir), *e)) r.classes.emplace_back(e->d_name);
    }
  }
  if (r.classes.empty()) throw dataset_error(root, "couldn't find any class folder");
  python_sort(r.classes);

  const std::size_t n = r.classes.size();
  std::vector<string_table> per_class(n);
  std::vector<std::vector<dir_record>> per_class_dirs(n);
  std::vector<std::vector<skipped_directory>> per_class_skipped(n);
  parallel_for(n, scan_threads(options, n), [&](std::size_t c) {
    const int fd = ::openat(root_fd.get(), r.classes[c].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      // Left out, the class keeps its label: no other class's label shifts.
      const int err = errno;
      refuse_directory(options, per_class_skipped[c], err, "cannot open class folder", root + "/" + r.classes[c]);
      return;
    }
    class_walker walker(root, r.classes[c], options);
    walker.walk_class(fd);
    walker.emit(per_class[c]);
    per_class_dirs[c] = std::move(walker.records());
    per_class_skipped[c] = std::move(walker.skipped());
  });

  std::vector<std::string> empty;
  std::size_t total = 0;
  std::size_t chars = 0;
  for (std::size_t c = 0; c < n; ++c) {
    // A class emptied by an unreadable directory was reported as such.
    if (per_class[c].size() == 0 && per_class_skipped[c].empty()) empty.push_back(r.classes[c]);
    total += per_class[c].size();
    chars += per_class[c].chars().size();
  }
  if (!empty.empty()) {
    std::string msg = "found no valid file for the classes ";
    std::string where;
    for (std::size_t k = 0; k < empty.size(); ++k) {
      msg += (k != 0 ? ", " : "") + empty[k];
      where += (k != 0 ? ", " : "") + root + "/" + empty[k];
    }
    msg += " (" + where + "). Supported extensions are: ";
    for (std::size_t k = 0; k < image_extensions().size(); ++k) {
      msg += (k != 0 ? ", " : "") + std::string(image_extensions()[k]);
    }
    throw dataset_error(root, msg);
  }
  r.names.reserve(total, chars);
  r.counts.reserve(n);
  for (std::size_t c = 0; c < n; ++c) {
    r.names.append(per_class[c]);
    r.counts.push_back(per_class[c].size());
    for (auto& d : per_class_dirs[c]) r.dirs.push_back(std::move(d));
    for (auto& k : per_class_skipped[c]) r.skipped.push_back(std::move(k));
  }
  return r;
}

std::string serialize(const std::string& abs_root, std::uint64_t fingerprint, const scan_result& r) {
  index_writer w;
  write_index_header(w, folder_magic, folder_version);
  w.str(abs_root);
  w.u64(fingerprint);
  w.u64(r.dirs.size());
  for (const auto& d : r.dirs) {
    w.str(d.rel);
    w.u64(d.stamp.ino);
    w.i64(d.stamp.mtime_sec);
    w.i64(d.stamp.mtime_nsec);
  }
  w.u64(r.classes.size());
  for (std::size_t c = 0; c < r.classes.size(); ++c) {
    w.str(r.classes[c]);
    w.u64(r.counts[c]);
  }
  w.array(r.names.ends());
  w.str(r.names.chars());
  return w.finish();
}

// The cached scan when the file is intact, made for this root and options,
// and every recorded directory still has its inode and mtime; else nullopt
// with the reason in `note`.
std::optional<scan_result> load_cached(const std::filesystem::path& file, const std::string& root,
                                       const std::string& abs_root, std::uint64_t fingerprint,
                                       const dataset_options& options, std::string& note) {
  auto bytes = read_whole_file(file);
  if (!bytes) {
    note = "no cached index yet";
    return std::nullopt;
  }
  scan_result r;
  try {
    index_reader in(std::move(*bytes));
    if (!read_index_header(in, folder_magic, folder_version)) {
      note = "cached index has another format version";
      return std::nullopt;
    }
    if (in.str() != abs_root || in.u64() != fingerprint) {
      note = "cached index is for another root or options";
      return std::nullopt;
    }
    const std::uint64_t n_dirs = in.u64();
    for (std::uint64_t k = 0; k < n_dirs; ++k) {
      dir_record d;
      d.rel = in.str();
      d.stamp.ino = in.u64();
      d.stamp.mtime_sec = in.i64();
      d.stamp.mtime_nsec = in.i64();
      r.dirs.push_back(std::move(d));
    }
    const std::uint64_t n_classes = in.u64();
    std::uint64_t total = 0;
    for (std::uint64_t k = 0; k < n_classes; ++k) {
      r.classes.push_back(in.str());
      r.counts.push_back(in.u64());
      total += r.counts.back();
    }
    auto ends = in.array<std::uint64_t>();
    auto chars = in.str();
    if (!in.at_end() || ends.size() != total) throw std::runtime_error("inconsistent counts");
    r.names.assign(std::move(chars), std::move(ends));
  } catch (const std::exception& e) {
    note = std::string("cached index unusable (") + e.what() + ")";
    return std::nullopt;
  }

  std::atomic<bool> changed{false};
  std::mutex note_mutex;
  std::string changed_dir;
  parallel_for(r.dirs.size(), scan_threads(options, r.dirs.size() / 64 + 1), [&](std::size_t k) {
    if (changed.load(std::memory_order_relaxed)) return;
    const dir_record& d = r.dirs[k];
    const std::string path = d.rel.empty() ? root : root + "/" + d.rel;
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    const file_stamp now = exists ? stamp_of(st) : file_stamp{};
    if (!exists || now.ino != d.stamp.ino || now.mtime_sec != d.stamp.mtime_sec ||
        now.mtime_nsec != d.stamp.mtime_nsec) {
      std::lock_guard lock(note_mutex);
      if (changed_dir.empty()) changed_dir = path;
      changed.store(true, std::memory_order_relaxed);
    }
  });
  if (changed.load()) {
    note = "directory changed since the index was cached: " + changed_dir;
    return std::nullopt;
  }
  return r;
}

}  // namespace

dataset_contents image_folder_contents(const std::filesystem::path& root_path, const dataset_options& options) {
  const auto start = std::chrono::steady_clock::now();
  std::string root = root_path.native();
  while (root.size() > 1 && root.back() == '/') root.pop_back();  // keep "/" itself
  std::error_code ec;
  const std::string abs_root = std::filesystem::absolute(root, ec).lexically_normal().native();
  const std::uint64_t fingerprint = options_fingerprint(options);

  index_report report;
  std::optional<std::filesystem::path> cache_file;
  if (options.use_cache) {
    if (auto dir = cache_dir(options)) {
      cache_file = *dir / ("folder-" + hex64(hash_bytes(abs_root, fingerprint)) + ".idx");
      report.cache_path = cache_file->native();
    } else {
      report.cache_note = "no cache directory (set RINGFEED_CACHE_DIR, XDG_CACHE_HOME or HOME)";
    }
  } else {
    report.cache_note = "cache disabled";
  }

  std::optional<scan_result> result;
  if (cache_file) {
    result = load_cached(*cache_file, root, abs_root, fingerprint, options, report.cache_note);
    if (result) {
      report.from_cache = true;
      report.cache_note.clear();
      index_cache_used(*cache_file);
    }
  }
  if (!result) {
    result = scan(root, options);
    if (cache_file && !result->skipped.empty()) {
      // chmod does not change a directory's mtime: a cached index would hide
      // the left-out directories' samples after the permissions are fixed.
      report.cache_note = "not cached: " + std::to_string(result->skipped.size()) +
                          " unreadable director" + (result->skipped.size() == 1 ? "y" : "ies") + " left out";
    } else if (cache_file) {
      const double now = wall_clock_now();
      const auto racy = std::find_if(result->dirs.begin(), result->dirs.end(),
                                     [&](const dir_record& d) { return is_racy(d.stamp, now); });
      if (racy != result->dirs.end()) {
        report.cache_note = "not cached: " + (racy->rel.empty() ? root : root + "/" + racy->rel) +
                            " was modified less than 2 s ago (it may still be changing)";
      } else if (std::string err = write_file_atomically(*cache_file, serialize(abs_root, fingerprint, *result));
                 !err.empty()) {
        report.cache_note = "not cached: " + err;
      } else {
        report.cache_note.clear();  // written: reused next time
        prune_index_cache(cache_file->parent_path());
      }
    }
  }

  dataset_contents c;
  c.kind = dataset_kind::image_folder;
  c.source = root_path.native();
  c.root = root;
  c.classes = std::move(result->classes);
  c.names = std::move(result->names);
  c.labels.reserve(c.names.size());
  for (std::size_t k = 0; k < result->counts.size(); ++k) {
    c.labels.insert(c.labels.end(), result->counts[k], static_cast<std::int64_t>(k));
  }
  report.directories = result->dirs.size();
  report.skipped = std::move(result->skipped);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.report = std::move(report);
  return c;
}

// --- ImageFolder over a listed tree (nfs://) --------------------------------------------

namespace {

bool listed_name_ok(const listed_entry& e, const dataset_options& options) {
  if (e.name.empty() || e.name == "." || e.name == "..") return false;
  return options.include_hidden || !is_hidden(e.name);
}

// One class of a listed tree, walked as os.walk would: every directory's
// images, the directories in the order of their paths.
struct listed_class {
  std::vector<std::string> dirs;                      // relative to the class ("" for itself)
  std::vector<std::vector<listed_entry>> images;      // per dir, sorted
  std::vector<skipped_directory> skipped;             // options.skip_unreadable: left out
  void walk(const directory_lister& list, const std::string& root, const std::string& class_rel,
            const std::string& sub, const dataset_options& options, std::size_t depth) {
    // A listing has no inodes to detect a cycle by (links are not followed,
    // but a server may still present one): 64 levels is deeper than any dataset.
    if (depth > 64)
      throw dataset_error(class_rel + "/" + sub, "directory tree deeper than 64 levels (a cycle?)");
    const std::string rel = sub.empty() ? class_rel : class_rel + "/" + sub;
    std::vector<listed_entry> entries;
    try {
      entries = list(rel);
    } catch (const std::exception& e) {
      if (!options.skip_unreadable) throw;
      skipped.push_back({root + "/" + rel, e.what()});
      return;
    }
    std::vector<listed_entry> files;
    std::vector<std::string> subdirs;
    for (auto& e : entries) {
      if (!listed_name_ok(e, options)) continue;
      if (e.is_directory) {
        subdirs.push_back(std::move(e.name));
      } else if (has_image_extension(e.name)) {
        files.push_back(std::move(e));
      }
    }
    std::vector<std::string> names;
    names.reserve(files.size());
    for (const auto& f : files) names.push_back(f.name);
    std::vector<listed_entry> sorted;
    sorted.reserve(files.size());
    for (const std::size_t i : python_order(names)) sorted.push_back(std::move(files[i]));
    dirs.push_back(sub);
    images.push_back(std::move(sorted));
    for (const std::string& d : subdirs)
      walk(list, root, class_rel, sub.empty() ? d : sub + "/" + d, options, depth + 1);
  }
};

}  // namespace

dataset_contents listed_image_folder_contents(std::string root, const directory_lister& list,
                                              const dataset_options& options) {
  const auto start = std::chrono::steady_clock::now();
  while (root.size() > 1 && root.back() == '/' && root[root.size() - 2] != '/')
    root.pop_back();  // "nfs://s/e/train/" → "nfs://s/e/train"; "nfs://s/a/b//" keeps its "//"
  std::vector<std::string> classes;
  for (auto& e : list("")) {
    if (e.is_directory && listed_name_ok(e, options)) classes.push_back(std::move(e.name));
  }
  if (classes.empty()) throw dataset_error(root, "couldn't find any class folder");
  python_sort(classes);

  const std::size_t n = classes.size();
  std::vector<listed_class> per_class(n);
  parallel_for(n, scan_threads(options, n),
               [&](std::size_t c) { per_class[c].walk(list, root, classes[c], "", options, 0); });

  dataset_contents out;
  out.kind = dataset_kind::image_folder;
  out.source = root;
  out.root = root;
  std::vector<std::string> empty;
  std::string path;
  for (std::size_t c = 0; c < n; ++c) {
    listed_class& lc = per_class[c];
    const std::size_t before = out.labels.size();
    for (const std::size_t d : python_order(lc.dirs)) {
      for (const listed_entry& f : lc.images[d]) {
        path.assign(classes[c]);
        path.push_back('/');
        if (!lc.dirs[d].empty()) {
          path.append(lc.dirs[d]);
          path.push_back('/');
        }
        path.append(f.name);
        out.names.push_back(path);
        out.labels.push_back(static_cast<std::int64_t>(c));
        out.sizes.push_back(f.size);
      }
    }
    if (out.labels.size() == before && lc.skipped.empty()) empty.push_back(classes[c]);
    std::sort(lc.skipped.begin(), lc.skipped.end(), [](const auto& x, const auto& y) { return x.path < y.path; });
    for (auto& k : lc.skipped) out.report.skipped.push_back(std::move(k));
    out.report.directories += lc.dirs.size();
  }
  if (!empty.empty()) {
    std::string msg = "found no valid file for the classes ";
    for (std::size_t k = 0; k < empty.size(); ++k) msg += (k != 0 ? ", " : "") + empty[k];
    msg += ". Supported extensions are: ";
    for (std::size_t k = 0; k < image_extensions().size(); ++k)
      msg += (k != 0 ? ", " : "") + std::string(image_extensions()[k]);
    throw dataset_error(root, msg);
  }
  out.classes = std::move(classes);
  out.report.directories += 1;  // the root
  out.report.cache_note = "listed trees are not cached";
  out.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace ringfeed::data::detail
