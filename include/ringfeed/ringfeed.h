/* ringfeed.h — the plain C API over ringfeed::loader (C99 or later, and C++).
 *
 * A thin layer: it translates types and errors, and holds no pipeline logic
 * (see loader.hpp for what the loader does and guarantees: batches in
 * sampler order, pixels keyed by (seed, epoch, sample index), resume).
 *
 *   rf_options* o = rf_options_new();
 *   rf_options_set(o, "source", "/data/imagenet/train");
 *   rf_options_set(o, "batch_size", "256");
 *   rf_loader* l = rf_loader_open(o);            // NULL: see rf_last_error()
 *   rf_options_free(o);                          // the loader keeps a copy
 *   rf_batch* b;
 *   int rc;
 *   while ((rc = rf_loader_next(l, &b)) == 1) {  // 0: end of epoch, -1: error
 *     step(rf_batch_images(b), rf_batch_labels(b), rf_batch_size(b));
 *     rf_batch_release(b);
 *   }
 *   rf_loader_close(l);
 *
 * Errors: no exception crosses this API. A function that fails returns its
 * failure value (NULL, -1 or nonzero, as documented) and sets a message for
 * rf_last_error() on the calling thread, naming the option, the file and the
 * reason where there is one.
 *
 * Threads: each rf_options and rf_loader is used by one thread at a time
 * (the loader's consumer thread; it opens, drives and closes the loader).
 * Different loaders are independent. A batch is read by the thread that
 * holds it; rf_batch_release may be called from any thread, also after the
 * loader was closed.
 */
#ifndef RINGFEED_RINGFEED_H
#define RINGFEED_RINGFEED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define RF_NOEXCEPT noexcept
extern "C" {
#else
#define RF_NOEXCEPT
#endif

/** Options for one loader (opaque). */
typedef struct rf_options rf_options;
/** A running loader (opaque). */
typedef struct rf_loader rf_loader;
/** One batch lent to the consumer (opaque); give it back with rf_batch_release. */
typedef struct rf_batch rf_batch;

/** Element type of a batch's images. */
typedef enum rf_dtype { RF_UINT8 = 0, RF_FLOAT32 = 1, RF_FLOAT16 = 2, RF_BFLOAT16 = 3 } rf_dtype;

/** Order of a batch's image dimensions: uint8 batches are NHWC (NCHW after
 *  PILToTensor), float ones NCHW unless the output asked for NHWC
 *  ("float32_nhwc", ...). */
typedef enum rf_layout { RF_NHWC = 0, RF_NCHW = 1 } rf_layout;

/** Where a loader is in its stream of batches: enough to continue exactly
 *  (ringfeed::loader_state). */
typedef struct rf_state {
  uint64_t seed;
  uint64_t epoch;
  uint64_t next_batch; /**< first batch of `epoch` not yet delivered */
  uint64_t rank;
  uint64_t world_size;
} rf_state;

/* --- errors and version ------------------------------------------------- */

/** The message of the last failure of an rf_ call on this thread, "" if none
 *  failed yet. Successful calls leave it as it is. The pointer stays valid
 *  until the next failing rf_ call on this thread (or rf_clear_error). */
const char* rf_last_error(void) RF_NOEXCEPT;

/** Sets rf_last_error() to "" on this thread. */
void rf_clear_error(void) RF_NOEXCEPT;

/** The library's version, "MAJOR.MINOR.PATCH" (static storage). */
const char* rf_version(void) RF_NOEXCEPT;

/** Frees memory this API returned with malloc (rf_loader_stats_json). NULL is a no-op. */
void rf_free(void* p) RF_NOEXCEPT;

/* --- options ------------------------------------------------------------ */

/** New options with the defaults below; NULL when out of memory.
 *  Free with rf_options_free. */
rf_options* rf_options_new(void) RF_NOEXCEPT;

/** Frees the options. NULL is a no-op. Loaders opened from them are unaffected. */
void rf_options_free(rf_options* options) RF_NOEXCEPT;

/** Sets one option from its text form. Returns 0, or nonzero for an unknown
 *  key, a value that does not parse or is out of range, or a NULL argument
 *  (rf_last_error() names the key and the value); the options are then
 *  unchanged. Booleans take 1/0, true/false, yes/no or on/off; integers are
 *  decimal.
 *
 *  key            value                                         default
 *  source         ImageFolder dir, manifest .csv/.tsv, tar      (required)
 *                 shards, nfs://, s3:// or https:// locations
 *  pipeline       train: RandomResizedCrop(size) + flip,        train
 *                 shuffled; val: Resize(size*256/224) +
 *                 CenterCrop(size), in dataset order
 *  size           output side in pixels (>= 1)                  224
 *  transform      a torchvision transform list as a spec        ""
 *                 string, e.g. "Resize(256); CenterCrop(224);
 *                 ToTensor(); Normalize((0.5,), (0.5,))"
 *                 (grammar: include/ringfeed/image/
 *                 transform_spec.hpp); replaces pipeline and
 *                 size; the batch is what it ends with (float32
 *                 NCHW after ToTensor, uint8 NCHW after
 *                 PILToTensor, uint8 NHWC for an image);
 *                 shuffled when an op is random
 *  exact          bit-exact torchvision transforms (else fast)  false
 *  max_pixels     refuse images declaring more pixels, before   178956970
 *                 allocating (a decompression bomb)
 *  output         float32 | float16 | bfloat16 (normalized      float32
 *                 NCHW), the same + _nhwc (NHWC, e.g.           (transform:
 *                 "float16_nhwc") | uint8 (NHWC); with          its end)
 *                 transform: a float one for a list ending
 *                 with a float tensor, else uint8
 *  batch_size     samples per batch (>= 1)                      256
 *  shuffle        overrides the pipeline's choice               train: true, val: false
 *  seed           sampler and augmentation seed                 0
 *  drop_last      drop a short last batch                       false
 *  rank           this process's rank            RANK/WORLD_SIZE or SLURM env, else 0
 *  world_size     processes sharing the dataset  RANK/WORLD_SIZE or SLURM env, else 1
 *  threads        decode threads (0: this rank's share of the   0
 *                 CPUs: affinity mask within the cgroup quota,
 *                 divided among local ranks)
 *  io_depth       reads in flight (0: from the storage probe)   0
 *  io             auto | uring | pread                          auto
 *  memory_budget  bytes of batch slabs (>= 2 batches)           max(1 GiB, 4 batches)
 *  prefetch_batches  batches ready ahead (0: from the budget)   0
 *  on_error       skip (leave bad files out) | fail             fail
 *  direct         O_DIRECT reads                                false
 *  cache_dir      local cache of remote samples ("" : none)     ""
 *  cache_bytes    bytes that cache may hold (pixels: default    10737418240
 *                 is the disk's free space less 5%)
 *  cache          bytes | pixels: what cache_dir keeps, remote   bytes
 *                 samples' encoded bytes or every sample's
 *                 decoded pixels (later epochs skip the decode)
 *  stream_shards  read tar shards front to back                 false
 *  device         CUDA device, -1: host batches                 -1
 *  decode         where JPEGs are decoded: auto | cpu | gpu     auto
 *                 gpu: nvJPEG (hardware engines, hybrid), then
 *                 crop/resize/flip and the output on the
 *                 device; refused (at rf_loader_open, saying
 *                 why) with exact, device -1, a transform op
 *                 without a device kernel or cache=pixels.
 *                 auto: gpu where it could run, else cpu; the
 *                 CPU decodes when nvJPEG or the device is
 *                 missing. The stats JSON says where and why
 *                 ("decode_reason", "gpu_decode")
 *
 *  s3:// sources (each first in its chain, before the AWS variables and
 *  profile files; "" leaves it to them):
 *  s3_endpoint    e.g. http://127.0.0.1:9000 (path-style)       ""
 *  s3_region                                                    ""
 *  s3_profile     a profile of ~/.aws/credentials and config    ""
 *  s3_ca_bundle   PEM file of trusted CAs                       ""
 *  s3_anonymous   unsigned requests (public buckets)            false
 *  s3_path_style  true | false | auto (path-style for custom    auto
 *                 endpoints, virtual-host on AWS)
 *  s3_access_key_id, s3_secret_access_key   given together,    ""
 *                 not with s3_anonymous
 *  s3_session_token  with them, for temporary credentials       ""
 *  The options are settled as in every front end (ringfeed::resolve,
 *  include/ringfeed/loader/resolve.hpp) when the loader opens:
 *  rf_loader_open reports a contradiction, naming the option.
 *  A secret is never part of an error message or of the stats.
 */
int rf_options_set(rf_options* options, const char* key, const char* value) RF_NOEXCEPT;

/** A loader opened from these options continues where `state` (from
 *  rf_loader_state) left off, giving the batches the saved loader would
 *  have given. The seed option must equal state->seed (rf_loader_open
 *  fails otherwise). NULL `state`: start at epoch 0, batch 0 (the default).
 *  Returns 0, or -1 for NULL options. */
int rf_options_set_resume(rf_options* options, const rf_state* state) RF_NOEXCEPT;

/* --- loader --------------------------------------------------------------- */

/** Indexes the source, starts the threads, the reads and prefetching.
 *  Returns NULL on failure (bad options, a source that cannot be indexed,
 *  io=uring without io_uring, ...; see rf_last_error()). The loader copies
 *  what it needs: `options` may be freed or changed afterwards. Log lines
 *  go to stderr, each prefixed "ringfeed: ". */
rf_loader* rf_loader_open(const rf_options* options) RF_NOEXCEPT;

/** Stops the pipeline, waits for the work in flight and frees the loader.
 *  Batches the caller still holds stay valid until each is released. NULL
 *  is a no-op. Call it on the loader's consumer thread. */
void rf_loader_close(rf_loader* loader) RF_NOEXCEPT;

/** Waits for the next batch of the current epoch.
 *  Returns 1 and stores a new batch in *out (the caller releases it);
 *  0 at the end of the epoch (*out = NULL): the following call starts the
 *  next epoch; -1 on error (*out = NULL): with on_error=fail, the first
 *  file that could not be read or decoded (rf_last_error() names the file
 *  and the reason). After an error every call returns -1 again until
 *  rf_loader_set_epoch. Blocking; one consumer thread per loader. */
int rf_loader_next(rf_loader* loader, rf_batch** out) RF_NOEXCEPT;

/** Batches per epoch for this rank (what rf_loader_next delivers between
 *  two 0 returns, unless on_error=skip left whole batches empty). 0 for NULL. */
size_t rf_loader_batches_per_epoch(const rf_loader* loader) RF_NOEXCEPT;

/** Drops what was prefetched and continues at batch 0 of `epoch`; clears a
 *  previous error. Returns 0, or -1 on failure. */
int rf_loader_set_epoch(rf_loader* loader, uint64_t epoch) RF_NOEXCEPT;

/** Stores the position of the next batch rf_loader_next delivers in *out.
 *  Returns 0, or -1 for NULL arguments. */
int rf_loader_state(const rf_loader* loader, rf_state* out) RF_NOEXCEPT;

/** The loader's counters so far as one JSON object (ringfeed::loader_stats::json():
 *  seconds, images, batches, stages, bottleneck, skipped[{path, reason}],
 *  ...), NUL-terminated, allocated with malloc: free it with rf_free.
 *  Valid UTF-8 whatever bytes the file names hold: a path that is not UTF-8
 *  is written as Python's surrogateescape would (each stray byte 0xNN as the
 *  escape \udcNN; see ringfeed::json_string). NULL on failure. */
char* rf_loader_stats_json(const rf_loader* loader) RF_NOEXCEPT;

/* --- batches ---------------------------------------------------------------
 * Accessors read a batch the caller holds (not NULL, not yet released).
 * Their pointers stay valid until rf_batch_release. */

/** The images: host memory, or CUDA device memory when rf_batch_on_device. */
const void* rf_batch_images(const rf_batch* batch) RF_NOEXCEPT;
rf_dtype rf_batch_dtype(const rf_batch* batch) RF_NOEXCEPT;
rf_layout rf_batch_layout(const rf_batch* batch) RF_NOEXCEPT;
/** shape[0..3] = N, C, H, W (RF_NCHW) or N, H, W, C (RF_NHWC); N = rf_batch_size. */
void rf_batch_shape(const rf_batch* batch, int64_t shape[4]) RF_NOEXCEPT;
/** Bytes of the images: the product of the shape times the element size. */
size_t rf_batch_nbytes(const rf_batch* batch) RF_NOEXCEPT;
/** rf_batch_size labels in slot order (host memory). */
const int64_t* rf_batch_labels(const rf_batch* batch) RF_NOEXCEPT;
/** rf_batch_size dataset indices in slot order (host memory). */
const size_t* rf_batch_indices(const rf_batch* batch) RF_NOEXCEPT;
/** Samples in the batch: batch_size, fewer at the end of an epoch (without
 *  drop_last) or when on_error=skip left samples out. */
size_t rf_batch_size(const rf_batch* batch) RF_NOEXCEPT;
uint64_t rf_batch_epoch(const rf_batch* batch) RF_NOEXCEPT;
/** Position of the batch in its epoch (0-based). */
size_t rf_batch_number(const rf_batch* batch) RF_NOEXCEPT;
/** 1 when the images are in CUDA device memory, else 0. */
int rf_batch_on_device(const rf_batch* batch) RF_NOEXCEPT;

/** Device batches: makes the CUDA stream `stream` (a cudaStream_t; NULL is
 *  the device's default stream, a real stream) wait, on the device, until
 *  the images are uploaded: no host synchronization. Work that reads the
 *  images goes on that stream afterwards. Host batches: nothing to do.
 *  Returns 0, or -1 (see rf_last_error()). */
int rf_batch_wait(rf_batch* batch, void* stream) RF_NOEXCEPT;

/** Gives the batch's memory back to its loader (or frees it when the loader
 *  is closed) and frees the handle. Any thread. Device batches: the buffer
 *  is written again only after the work queued so far on the stream given
 *  to rf_batch_wait (the default stream without one) has finished. NULL is
 *  a no-op. */
void rf_batch_release(rf_batch* batch) RF_NOEXCEPT;

/** rf_batch_release, for device batches after the work queued so far on
 *  `stream` (a cudaStream_t; NULL: the default stream), the stream that
 *  reads the images. */
void rf_batch_release_on_stream(rf_batch* batch, void* stream) RF_NOEXCEPT;

/** rf_batch_release when the caller has synchronized with every piece of
 *  work reading the images (cudaDeviceSynchronize, cudaStreamSynchronize):
 *  the buffer may be written at once. */
void rf_batch_release_synchronized(rf_batch* batch) RF_NOEXCEPT;

#ifdef __cplusplus
}  /* extern "C" */
#endif
#undef RF_NOEXCEPT

#endif /* RINGFEED_RINGFEED_H */
