// ringfeed::data::dataset — which samples exist, where their bytes are, and
// their labels: the index the sampler orders and the reader fetches.
//
// Three sources give the same value type:
//  - ImageFolder (scan_image_folder): torchvision 0.14's DatasetFolder order
//    and labels, scanned concurrently and cached;
//  - a manifest (read_manifest): CSV or TSV of `path,label`;
//  - tar shards in the WebDataset convention (index_tar_shards): an index of
//    member offsets, built once per shard and kept beside it or in a cache
//    directory, so a sample is one read at an offset.
// open_dataset(source) picks one from a source string.
//
// A dataset is immutable once built: every const member may be called from
// any number of threads at once. Sample i is the i-th in the source's order;
// the same files give the same order and indices on every run and machine.
//
// Errors: I/O failures throw std::system_error (errno, with the path in the
// message); malformed input throws dataset_error naming the file (and the
// line for manifests, the member for tar shards) and the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ringfeed/io/buffer.hpp>
#include <ringfeed/io/source.hpp>

namespace ringfeed::data {

/// A malformed dataset: bad manifest line, bad tar member, empty class
/// folder, unsupported source. what() is "<path>[:<line>]: <reason>".
class dataset_error : public std::runtime_error {
 public:
  dataset_error(std::string path, const std::string& reason, std::size_t line = 0);
  /// The file or directory at fault.
  [[nodiscard]] const std::string& path() const noexcept { return m_path; }
  /// 1-based line of a manifest error; 0 when not about a line.
  [[nodiscard]] std::size_t line() const noexcept { return m_line; }

 private:
  std::string m_path;
  std::size_t m_line;
};

enum class dataset_kind : std::uint8_t { image_folder, manifest, tar_shards, lmdb };

/// What open_dataset does with a source string.
enum class source_kind : std::uint8_t { auto_detect, image_folder, manifest, tar_shards, lmdb };

/// Bytes count not stored in the index: read the whole file.
inline constexpr std::uint64_t unknown_size = io::unknown_size;
/// sample_location::shard of a sample that is a file of its own.
inline constexpr std::uint32_t no_shard = ~std::uint32_t{0};

/// Where one sample's bytes are. Views into the dataset: valid while it lives.
struct sample_location {
  std::string_view base;  ///< directory `path` is relative to; empty when `path` is absolute or cwd-relative
  std::string_view path;  ///< the file to open: relative to `base` (openat on a dirfd of base) unless absolute
  std::uint32_t shard = no_shard;  ///< index into dataset::shards() for tar samples
  std::uint64_t offset = 0;        ///< first byte of the sample in that file
  std::uint64_t size = unknown_size;  ///< bytes of the sample; unknown_size for a whole file

  /// Writes `base/path` (or `path` when base is empty or path absolute) into
  /// `out`, reusing its capacity: the path to pass to open(2).
  void full_path(std::string& out) const;
};

/// Options for every source kind; each kind reads the fields that concern it.
struct dataset_options {
  source_kind kind = source_kind::auto_detect;

  // --- index cache (ImageFolder and tar shards) --------------------------
  /// Whether to read and write cached indexes at all.
  bool use_cache = true;
  /// Where ImageFolder indexes go, and tar indexes whose shard directory is
  /// not writable. Empty: $RINGFEED_CACHE_DIR, else $XDG_CACHE_HOME/ringfeed,
  /// else $HOME/.cache/ringfeed; none of those: no cache. An index there
  /// not read or written for 30 days is removed when another is written
  /// (a sweep at most once a day; nothing else in the directory is touched).
  std::filesystem::path cache_dir;
  /// Tar: keep `<shard>.ringfeed.idx` beside each shard when its directory
  /// is writable (else cache_dir). false: always cache_dir.
  bool index_beside_shards = true;
  /// Threads that list class directories / index shards. 0: 8, at most one
  /// per class or shard. Listing is I/O latency bound, so more threads than
  /// cores helps on network file systems.
  unsigned scan_threads = 0;

  // --- ImageFolder ---------------------------------------------------------
  /// false (default): entries whose name starts with '.' (files, class and
  /// sub folders) are ignored. true: kept, which is exactly torchvision 0.14
  /// (it keeps them, so `.git` becomes a class).
  bool include_hidden = false;
  /// A directory below the root (a class folder or one under it) that cannot
  /// be opened or listed (EACCES after a chmod, EIO): false (default), the
  /// scan throws std::system_error naming it; true, it is left out, named
  /// with the reason in index_report::skipped, and the scan goes on. A class
  /// whose folder is left out keeps its label (no other label shifts) and
  /// holds no samples. A loader sets it when its on_error is skip.
  bool skip_unreadable = false;

  // --- tar shards ----------------------------------------------------------
  /// Suffix of the member holding a sample's integer label (`key.cls`).
  std::string label_suffix = "cls";
  /// true: a sample without a label member is an error. false: its label is -1.
  bool require_labels = true;
  /// Shards in object storage (https://, s3://) are indexed by streaming
  /// them front to back in ranged GETs of this many bytes (8-16 MiB keeps
  /// request overhead small and one part's memory bounded).
  std::size_t object_part_bytes = std::size_t{8} << 20;
};

/// A directory the scan left out (dataset_options::skip_unreadable), a FIFO,
/// socket or device named like an image (whose read would block or never
/// end: without skip_unreadable the scan stops naming it), or an object of
/// a listing that no tree can hold (io::source::excluded), and why.
struct skipped_directory {
  std::string path;    ///< as the scan named it: the root joined with the directory's relative path
  std::string reason;  ///< e.g. "cannot open directory: Permission denied"
};

/// How the index was obtained (for logs and tests).
struct index_report {
  bool from_cache = false;            ///< ImageFolder: loaded from a valid cached index
  std::string cache_path;             ///< ImageFolder: the cache file read or written ("" if none)
  std::string cache_note;             ///< why nothing was cached or reused ("" when it was)
  std::size_t shards_indexed = 0;     ///< tar: shards parsed in this call
  std::size_t shards_from_cache = 0;  ///< tar: shards whose saved index was valid
  std::size_t directories = 0;        ///< ImageFolder: directories listed or validated
  /// ImageFolder with skip_unreadable: the directories left out, in class
  /// order, then the objects a listing held that no tree can. A scan that
  /// left one out is not cached.
  std::vector<skipped_directory> skipped;
  double seconds = 0;                 ///< wall time to build or load the index
};

/// One shard of a tar dataset.
struct shard_info {
  std::string path;  ///< absolute
  std::uint64_t size = 0;
  std::string index_path;  ///< where its index was read or written ("" when not saved)
};

namespace detail {

/// Strings stored back to back: two allocations for millions of names.
class string_table {
 public:
  void reserve(std::size_t count, std::size_t chars) {
    m_ends.reserve(count);
    m_chars.reserve(chars);
  }
  void push_back(std::string_view s) {
    m_chars.append(s);
    m_ends.push_back(m_chars.size());
  }
  /// Appends every string of `other`.
  void append(const string_table& other);
  [[nodiscard]] std::size_t size() const noexcept { return m_ends.size(); }
  [[nodiscard]] std::string_view operator[](std::size_t i) const noexcept {
    const std::size_t begin = i == 0 ? 0 : static_cast<std::size_t>(m_ends[i - 1]);
    return std::string_view(m_chars).substr(begin, static_cast<std::size_t>(m_ends[i]) - begin);
  }
  [[nodiscard]] const std::string& chars() const noexcept { return m_chars; }
  [[nodiscard]] const std::vector<std::uint64_t>& ends() const noexcept { return m_ends; }
  /// Adopts raw storage (from an index file); ends must be non-decreasing and
  /// end at chars.size() (checked: throws std::invalid_argument).
  void assign(std::string chars, std::vector<std::uint64_t> ends);

 private:
  std::string m_chars;
  std::vector<std::uint64_t> m_ends;  // end offset of string i in m_chars
};

/// Everything a dataset holds; built by the scanners, then frozen.
struct dataset_contents {
  dataset_kind kind = dataset_kind::image_folder;
  std::string source;
  std::string root;  // base of relative names ("" for tar)
  std::vector<std::string> classes;
  string_table names;                 // per sample
  std::vector<std::int64_t> labels;   // per sample
  std::vector<shard_info> shards;     // tar only
  std::vector<std::uint32_t> shard_of;  // tar only, per sample
  std::vector<std::uint64_t> offsets;   // tar only, per sample
  std::vector<std::uint64_t> sizes;     // tar: per sample; listed ImageFolder: per sample or empty
  index_report report;
};

}  // namespace detail

/// The index of a dataset. A value type; moves are cheap, copies copy the
/// whole index. All const members are safe from any thread.
class dataset {
 public:
  /// An empty dataset (size() == 0).
  dataset() = default;
  /// Freezes built contents (checks that the per-sample arrays agree;
  /// throws std::invalid_argument if not).
  explicit dataset(detail::dataset_contents contents);

  [[nodiscard]] dataset_kind kind() const noexcept { return m_c.kind; }
  /// The source string or path this dataset was made from.
  [[nodiscard]] const std::string& source() const noexcept { return m_c.source; }
  /// Directory that relative sample names are relative to ("" for tar).
  [[nodiscard]] const std::string& root() const noexcept { return m_c.root; }

  [[nodiscard]] std::size_t size() const noexcept { return m_c.labels.size(); }
  [[nodiscard]] bool empty() const noexcept { return m_c.labels.empty(); }

  /// Label of sample i. Precondition: i < size().
  [[nodiscard]] std::int64_t label(std::size_t i) const noexcept { return m_c.labels[i]; }
  /// All labels, in sample order (torchvision's `targets`).
  [[nodiscard]] const std::vector<std::int64_t>& labels() const noexcept { return m_c.labels; }
  /// Name of sample i: path relative to root() (ImageFolder), the path as
  /// written (manifest), the image member's name (tar). Precondition: i < size().
  [[nodiscard]] std::string_view name(std::size_t i) const noexcept { return m_c.names[i]; }
  /// Where sample i's bytes are; allocation-free. Precondition: i < size().
  [[nodiscard]] sample_location location(std::size_t i) const noexcept;
  /// What a source reads for sample i: the whole file, or the range of a
  /// tar shard or of an LMDB record. `scratch` holds the path it names
  /// (reused: allocation-free once grown). Precondition: i < size().
  [[nodiscard]] io::sample_ref ref(std::size_t i, std::string& scratch) const;
  /// The path to open for sample i (the shard for tar samples). Allocates.
  [[nodiscard]] std::string path(std::size_t i) const;
  /// Sample i for messages: its path, or `<shard>:<member>` for tar.
  [[nodiscard]] std::string describe(std::size_t i) const;

  /// Class names by label (ImageFolder: the folder names). Empty for
  /// manifests and tar shards, which carry numbers only.
  [[nodiscard]] const std::vector<std::string>& classes() const noexcept { return m_c.classes; }
  /// classes().size() when named, else 1 + the largest label (0 if none).
  [[nodiscard]] std::size_t num_classes() const noexcept { return m_num_classes; }

  /// Tar shards in order (empty for other kinds).
  [[nodiscard]] const std::vector<shard_info>& shards() const noexcept { return m_c.shards; }
  /// How the index was obtained.
  [[nodiscard]] const index_report& report() const noexcept { return m_c.report; }

 private:
  detail::dataset_contents m_c;
  std::size_t m_num_classes = 0;
};

/// torchvision 0.14's IMG_EXTENSIONS, lowercase with the dot.
[[nodiscard]] const std::vector<std::string_view>& image_extensions() noexcept;

/// True when `name` ends with one of image_extensions(), ignoring ASCII case
/// (torchvision's has_file_allowed_extension).
[[nodiscard]] bool has_image_extension(std::string_view name) noexcept;

/// Scans an ImageFolder tree exactly as torchvision 0.14's ImageFolder does:
/// classes = sorted names of root's sub-directories (symlinks followed),
/// labels 0..C-1 in that order; samples = for each class, for each directory
/// of `sorted(os.walk(class_dir, followlinks=True))`, its files sorted,
/// kept when their name ends with an image extension (any case). Sorting is
/// Python's str order (code points; names that are not UTF-8 order as
/// Python's surrogateescape decoding does). A broken symlink with an image
/// name is kept, as os.walk lists it among the files (reading it fails later).
/// Differences from torchvision, all deliberate: hidden entries are ignored
/// unless options.include_hidden; a symlink that leads back to a directory
/// being walked is not followed (os.walk would recurse until ELOOP); an
/// unreadable directory is an error (os.walk skips it silently), or with
/// options.skip_unreadable left out and named in report().skipped.
/// Class directories are listed concurrently (options.scan_threads) with
/// d_type, so only symlinks and DT_UNKNOWN entries cost a stat. The index is
/// cached in options.cache_dir, keyed by the absolute root and the options,
/// and reused while every listed directory keeps its inode and mtime (a
/// tree modified less than 2 s before the scan is not cached: a change in
/// the same timestamp tick could otherwise go unseen).
/// Throws dataset_error for no class folder or a class without images
/// (naming those classes; a class emptied by a skipped directory is not
/// one), std::system_error when the tree can't be read (the root, or with
/// skip_unreadable false any directory in it).
[[nodiscard]] dataset scan_image_folder(const std::filesystem::path& root, const dataset_options& options = {});

/// One entry of a directory listing given to scan_listed_image_folder.
struct listed_entry {
  std::string name;  ///< the entry's name (no '/'); "." and ".." are ignored
  bool is_directory = false;
  std::uint64_t size = unknown_size;  ///< bytes of a file, when the listing knows them
};
/// Lists the directory `relative` (a path under the tree's root, "" for the
/// root itself, components joined by '/'), in any order. Throws naming the
/// directory when it cannot.
using directory_lister = std::function<std::vector<listed_entry>(const std::string& relative)>;

/// ImageFolder over a tree that is not a local directory (an nfs:// export
/// listed with io::nfs_client::list): the same classes, order and labels as
/// scan_image_folder gives for the same tree, with `root` (e.g. the
/// nfs:// URL of the tree) as root() and base of every sample's path, and
/// the file sizes the listing gave (sample_location::size), so a reader or
/// cache can check them. Symbolic links are not followed (the listing says
/// whether an entry is a directory). Class directories are listed
/// concurrently (options.scan_threads; `list` must be thread-safe). Not
/// cached. With options.skip_unreadable, a directory below the root that
/// `list` fails on is left out and named in report().skipped with what it
/// threw. Throws dataset_error for no class folder or a class without
/// images, and what `list` throws.
[[nodiscard]] dataset scan_listed_image_folder(std::string root, const directory_lister& list,
                                               const dataset_options& options = {});

/// Reads a manifest: one sample per line, `path,label` (`.csv`) or
/// `path<TAB>label` (`.tsv`; other names: tab if the first line has one).
/// A first line whose label field is a name (it starts with neither a
/// digit, a sign nor a dot) is a header and skipped;
/// labels are 64-bit signed integers.
/// Fields may be double-quoted (RFC 4180: `""` is a quote; quoted fields may
/// hold the delimiter and line breaks); columns after the second are
/// ignored; blank lines are skipped; CRLF is accepted; a UTF-8 BOM is
/// skipped. Relative paths are relative to the manifest's directory. Files
/// are not opened here. Throws dataset_error naming the manifest and line.
[[nodiscard]] dataset read_manifest(const std::filesystem::path& manifest, const dataset_options& options = {});

/// A manifest given as lists rather than a file (torchvision's
/// `dataset.samples`): sample i is the file paths[i] (absolute, or relative
/// to the working directory), labelled labels[i]; `source` names the
/// dataset in messages and source(). Files are not opened here. Throws
/// std::invalid_argument when the lists differ in length, are empty, or a
/// path is empty or holds a NUL byte (naming its position).
[[nodiscard]] dataset listed_samples(std::string source, const std::vector<std::string>& paths,
                                     std::vector<std::int64_t> labels);

/// Indexes WebDataset tar shards, in the order given: members grouped by
/// key (the name up to the first dot of its basename, directory included,
/// as webdataset's base_plus_ext), consecutive members with one key forming
/// a sample (a key seen again later starts another sample, as in
/// webdataset; a suffix twice in one sample is an error); the sample's image is its member with suffix jpg, jpeg, png,
/// ppm, pgm, bmp, tif, tiff or webp (first in that order; suffixes compare
/// lowercased), its label the integer text of `key.<label_suffix>`.
/// Non-regular members and `__…__` metadata are skipped. ustar, GNU
/// (`././@LongLink`) and pax (`path`, `size`; global headers as Python's
/// tarfile applies them) names are understood.
/// Each shard's index is saved as `<shard>.ringfeed.idx` (or in the cache
/// dir) and reused while the shard's size and mtime are unchanged (not
/// saved for a shard modified less than 2 s ago). Shards are indexed
/// concurrently (options.scan_threads).
/// Throws dataset_error for malformed archives and samples, std::system_error
/// for I/O failures, naming the shard.
[[nodiscard]] dataset index_tar_shards(const std::vector<std::filesystem::path>& shards,
                                       const dataset_options& options = {});

/// io::expand_braces (io/url.hpp), the one expander of local and remote
/// patterns: `{a,b}` lists, `{000..099}` and `{a..e}` ranges, `\{` escapes,
/// as webdataset's braceexpand. Throws std::invalid_argument for an
/// unbalanced brace or past io::max_brace_expansion names.
[[nodiscard]] std::vector<std::string> expand_braces(std::string_view pattern);

/// The shard files a pattern names: braces expanded (in order), then each
/// piece with `*`, `?` or `[` globbed (matches sorted by bytes), else taken
/// as a path that must exist. Glob matches named `*.ringfeed.idx*` (shard
/// indexes) are left out. Throws dataset_error when a glob matches nothing,
/// std::system_error when a named shard is missing.
[[nodiscard]] std::vector<std::filesystem::path> expand_shard_pattern(std::string_view pattern);

/// Which kind a source string names, without building anything:
/// `nfs://…` and other URLs → throws dataset_error (a loader opens nfs://
/// ImageFolder sources itself, through io::nfs_client and
/// scan_listed_image_folder);
/// braces or glob characters, or a `.tar` file → tar_shards; `.csv`/`.tsv`
/// → manifest; a directory holding `.tar` files and no sub-directory →
/// tar_shards; another directory → image_folder. Throws std::system_error
/// when the path does not exist.
[[nodiscard]] source_kind detect_source_kind(std::string_view source);

/// Builds the dataset a source string names (see detect_source_kind;
/// options.kind overrides the detection).
[[nodiscard]] dataset open_dataset(std::string_view source, const dataset_options& options = {});

/// Builds the dataset `src` holds, listed through it: a local location as
/// open_dataset(src.location()); an nfs:// location as an ImageFolder
/// (scan_listed_image_folder over src.list); an LMDB database as its
/// records (index_lmdb); object storage (https://, s3://) by the
/// location's shape: `….csv`/`….tsv` a manifest (paths URLs, or keys
/// relative to the manifest), `….txt` a text file of shard URLs (one a
/// line, `#` comments), `….tar` or a `{…}` pattern tar shards (expanded as
/// expand_braces), anything else (s3:// only) an ImageFolder-shaped prefix
/// listed through src.list. Blocking. Throws as those do.
[[nodiscard]] dataset open_dataset(io::source& src, const dataset_options& options = {});

/// Indexes an LMDB database in the convention of the PyTorch ImageNet
/// tutorials: keys b"0", b"1", … each holding msgpack [image_bytes, label],
/// and b"__len__" the count (see io/lmdb in the README). Every record's
/// header and label are read once here; a sample is then the range of its
/// record holding the image bytes. Throws dataset_error naming the
/// database and the key for a record that does not follow the convention.
[[nodiscard]] dataset index_lmdb(io::source& src, const dataset_options& options = {});

}  // namespace ringfeed::data
