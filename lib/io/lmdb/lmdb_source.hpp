// Private: the LMDB implementation of io::source (source::open picks it for
// `lmdb://…` locations and directories holding data.mdb; see
// io::is_lmdb_location).
//
// The database is opened read-only without a lock file (MDB_RDONLY |
// MDB_NOLOCK | MDB_NOTLS, plus MDB_NOSUBDIR for a path to the data file), so
// a read-only directory or export works and nothing is written beside the
// data. The price of MDB_NOLOCK: nobody may write the database while it is
// read (a dataset does not change under a training run). Its map is sized
// from the file, not from what the writer asked for.
//
// A sample is an LMDB key: the whole value, or a byte range of it (the image
// inside a msgpack [image, label] record: data::index_lmdb). Each read
// begins a read-only transaction of its own (MDB_NOTLS allows that on any
// thread), looks the key up and copies the bytes out of the memory map into
// the caller's buffer. That copy is where the real I/O happens — page faults,
// served synchronously by the kernel — so it runs on a small pool of
// blocking I/O threads (depth of them, at most 16; options.pread_threads
// overrides) and the caller resumes on `resume_on`: a decode thread never
// takes a page fault of the database.
//
// What the memory map means for storage:
//  - Local SSD/NVMe: reads are page faults plus the kernel's readahead;
//    `depth` I/O threads keep that many faults in flight.
//  - NFS (a kernel mount): every page fault is a synchronous READ RPC the
//    kernel issues on the faulting thread. No deadline can interrupt it:
//    a dead or hung server blocks that I/O thread (and, once every I/O
//    thread is stuck, reads stop) until the mount's own timeout (a `soft`
//    mount) gives SIGBUS, or forever (`hard`, the default). The loader's
//    decode threads are never the ones blocked. Readahead is the kernel's
//    (the mount's rsize and the file's readahead window), not ringfeed's.
//  - HDD: every record is a random seek (~100 IOPS, ~1 MB/s of small JPEGs),
//    and LMDB's B-tree order is not the disk's.
//  Both are served far better by `ringfeed pack lmdb:///db OUT`, which
//  writes the records as tar shards once; `stream_shards` then reads them
//  front to back in large sequential reads with a shuffle buffer.
//
// Retries and deadlines (options.retry) do not apply: a page fault either
// succeeds, blocks, or kills the thread with SIGBUS (a file truncated under
// the map, a soft NFS mount timing out); there is no failed read to make
// again. source_stats::retries and ::timeouts stay 0. O_DIRECT
// (options.direct) does not apply either: the map is the page cache.
//
// Errors are std::system_error naming the location and the key: ENOENT for
// a missing key, EIO for a range that the value ends inside (saying where)
// or a whole value of another size than the index expects, EIO with LMDB's
// message for LMDB's own error codes.
#pragma once

#include <memory>
#include <string>

#include <ringfeed/io/source.hpp>
#include <ringfeed/thread_pool.hpp>

namespace ringfeed::io::detail {

/// Opens the LMDB database `location` names (see is_lmdb_location): maps it
/// read-only, without a lock file. Blocking. Throws std::invalid_argument
/// when `location` names no LMDB database, std::system_error naming the
/// location when it cannot be opened. Reads resume on `resume_on`, which
/// must outlive the source.
[[nodiscard]] std::unique_ptr<source> open_lmdb_source(const std::string& location, thread_pool& resume_on,
                                                       const source_options& options);

}  // namespace ringfeed::io::detail
