/* The C API (ringfeed.h) from a C11 program: a whole epoch on a small
 * ImageFolder built from tests/data/image/photos, the three output types,
 * epochs, preset shuffling, resume, both error policies on a corrupt file,
 * option errors, the decode option and batches outliving their loader. One line per check;
 * exit 1 on a failure.
 *
 * usage: c_api_tests <tests/data/image> */
#define _XOPEN_SOURCE 700

#include <ringfeed/ringfeed.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Defined in c_api_c99_check.c, compiled as C99. */
int rf_c99_header_check(void);

static int g_failures = 0;

static int check(int ok, const char* what) {
  printf("%s - %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) {
    printf("       rf_last_error: %s\n", rf_last_error());
    ++g_failures;
  }
  return ok;
}

/* --- scratch dataset ------------------------------------------------------- */

static char g_root[64];
static char g_photos[4096];

/* out = a/b; a path that does not fit ends the test (it never should). */
static void path_join(char* out, size_t n, const char* a, const char* b) {
  const int len = snprintf(out, n, "%s/%s", a, b);
  if (len < 0 || (size_t)len >= n) {
    fprintf(stderr, "path too long: %s/%s\n", a, b);
    exit(2);
  }
}

static int make_dir(const char* relative) {
  char p[4096];
  path_join(p, sizeof p, g_root, relative);
  return mkdir(p, 0755) == 0;
}

static int write_file(const char* relative, const void* data, size_t n) {
  char p[4096];
  path_join(p, sizeof p, g_root, relative);
  FILE* f = fopen(p, "wb");
  if (f == NULL) return 0;
  const int ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* Copies photos/<name> to <root>/<dir>/<name>. */
static int copy_photo(const char* dir, const char* name) {
  char src[4096], dst[4096];
  path_join(src, sizeof src, g_photos, name);
  path_join(dst, sizeof dst, dir, name);
  FILE* f = fopen(src, "rb");
  if (f == NULL) return 0;
  char* bytes = malloc(1 << 20);
  const size_t n = bytes != NULL ? fread(bytes, 1, 1 << 20, f) : 0;
  fclose(f);
  const int ok = n > 0 && write_file(dst, bytes, n);
  free(bytes);
  return ok;
}

/* good/{a,b}: 4 photos each. bad/{a,b}: 4 photos and a/garbage.jpg, which is no JPEG. */
static int make_datasets(void) {
  static const char* const a[] = {"astronaut.jpg", "brick_gray.jpg", "chelsea.jpg", "coffee.jpg"};
  static const char* const b[] = {"coffee_portrait.jpg", "grace_hopper.jpg", "hubble.jpg", "rocket.jpg"};
  static const char garbage[] = "this is not a JPEG, only bytes that claim to be one";
  int ok = make_dir("good") && make_dir("good/a") && make_dir("good/b") && make_dir("bad") && make_dir("bad/a") &&
           make_dir("bad/b") && make_dir("index");
  for (int i = 0; i < 4; ++i) ok = ok && copy_photo("good/a", a[i]) && copy_photo("good/b", b[i]);
  ok = ok && copy_photo("bad/a", a[0]) && copy_photo("bad/a", a[2]) &&
       write_file("bad/a/garbage.jpg", garbage, sizeof garbage);
  ok = ok && copy_photo("bad/b", b[2]) && copy_photo("bad/b", b[3]);
  return ok;
}

static int remove_entry(const char* p, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(p);
}

/* --- helpers ------------------------------------------------------------------- */

/* Options for <root>/<dir> with `n` more key/value pairs; NULL (and a FAIL line) if one is refused. */
static rf_options* options_for(const char* dir, int n, const char* const* kv) {
  char source[4096];
  path_join(source, sizeof source, g_root, dir);
  rf_options* o = rf_options_new();
  int ok = o != NULL && rf_options_set(o, "source", source) == 0 && rf_options_set(o, "rank", "0") == 0 &&
           rf_options_set(o, "world_size", "1") == 0 && rf_options_set(o, "threads", "2") == 0;
  for (int i = 0; ok && i < n; ++i) ok = rf_options_set(o, kv[2 * i], kv[2 * i + 1]) == 0;
  if (!check(ok, "options accepted")) {
    rf_options_free(o);
    return NULL;
  }
  return o;
}

static rf_loader* open_loader(const char* dir, int n, const char* const* kv) {
  rf_options* o = options_for(dir, n, kv);
  rf_loader* l = o != NULL ? rf_loader_open(o) : NULL;
  rf_options_free(o);
  check(l != NULL, "rf_loader_open");
  return l;
}

static int contains(const char* text, const char* part) { return text != NULL && strstr(text, part) != NULL; }

/* --- checks ------------------------------------------------------------------------ */

static void check_options(void) {
  rf_options* o = rf_options_new();
  check(rf_options_set(o, "no_such_key", "1") != 0 && contains(rf_last_error(), "no_such_key"),
        "unknown key refused, error names it");
  check(rf_options_set(o, "batch_size", "zero") != 0 && contains(rf_last_error(), "batch_size"),
        "bad batch_size refused, error names the key");
  check(rf_options_set(o, "max_pixels", "0") != 0 && contains(rf_last_error(), "max_pixels") &&
            rf_options_set(o, "max_pixels", "1000000") == 0,
        "max_pixels must be positive");
  check(rf_options_set(o, "pipeline", "none") != 0 && contains(rf_last_error(), "pipeline"),
        "pipeline=none refused");
  check(rf_options_set(o, "device", "-2") != 0 && rf_options_set(o, "shuffle", "maybe") != 0 &&
            rf_options_set(o, "io", NULL) != 0 && rf_options_set(NULL, "seed", "1") != 0,
        "out-of-range, non-boolean, NULL value and NULL options refused");
  check(rf_options_set(o, "output", "uint8") == 0 && rf_options_set(o, "io", "pread") == 0 &&
            rf_options_set(o, "on_error", "skip") == 0 && rf_options_set(o, "device", "-1") == 0,
        "valid values accepted");
  /* "" leaves the credentials to the AWS chain: not half a key pair. */
  check(rf_options_set(o, "s3_access_key_id", "") == 0 && rf_options_set(o, "s3_session_token", "") == 0 &&
            rf_options_set(o, "s3_path_style", "auto") == 0 && rf_options_set(o, "s3_anonymous", "maybe") != 0,
        "s3_* keys accepted, a bad s3_anonymous refused");
  rf_options_set(o, "source", "/nonexistent/ringfeed/dataset");
  rf_loader* l = rf_loader_open(o);
  check(l == NULL && contains(rf_last_error(), "/nonexistent/ringfeed/dataset"),
        "missing source (empty s3 credentials are no error): rf_loader_open is NULL, error names the path");
  /* settled as in every front end (ringfeed::resolve): the same refusals as Python's */
  rf_options_set(o, "s3_anonymous", "true");
  rf_options_set(o, "s3_access_key_id", "AKID");
  rf_options_set(o, "s3_secret_access_key", "SECRET");
  l = rf_loader_open(o);
  check(l == NULL && contains(rf_last_error(), "anonymous signs nothing") && !contains(rf_last_error(), "SECRET"),
        "s3_anonymous with keys refused at rf_loader_open, as Python refuses it");
  rf_options_set(o, "s3_anonymous", "false");
  rf_options_set(o, "transform", "CenterCrop(8)");
  rf_options_set(o, "size", "64");
  l = rf_loader_open(o);
  check(l == NULL && contains(rf_last_error(), "not both"), "transform with size refused");
  rf_options_free(o);
  rf_batch* b = NULL;
  check(rf_loader_next(NULL, &b) == -1 && b == NULL && rf_options_set_resume(NULL, NULL) == -1,
        "NULL handles are errors, not crashes");
}

/* decode=auto|cpu|gpu: parsed by rf_options_set, settled by rf_loader_open
 * as in every front end (ringfeed::resolve), reported in the stats JSON. */
static void check_decode(void) {
  rf_options* o = options_for("good", 0, NULL);
  if (o == NULL) return;
  check(rf_options_set(o, "decode", "nvjpeg") != 0 && contains(rf_last_error(), "decode") &&
            contains(rf_last_error(), "\"auto\", \"cpu\" or \"gpu\""),
        "a bad decode name refused, error lists the accepted ones");
  check(rf_options_set(o, "decode", "gpu") == 0, "decode=gpu accepted by rf_options_set");
  rf_loader* l = rf_loader_open(o); /* device -1, the C API's default */
  check(l == NULL && contains(rf_last_error(), "decode=\"gpu\"") && contains(rf_last_error(), "CUDA device"),
        "decode=gpu with host batches refused at rf_loader_open, saying it needs a device");
  rf_loader_close(l);
  check(rf_options_set(o, "device", "0") == 0 && rf_options_set(o, "exact", "true") == 0, "device 0, exact");
  l = rf_loader_open(o);
  check(l == NULL && contains(rf_last_error(), "IDCT and chroma upsampling are not libjpeg-turbo's"),
        "decode=gpu in exact mode refused, saying why");
  rf_loader_close(l);
  rf_options_free(o);

  const char* const auto_kv[] = {"batch_size", "4", "size", "32"};
  l = open_loader("good", 2, auto_kv);
  char* json = l != NULL ? rf_loader_stats_json(l) : NULL;
  check(contains(json, "\"decode_reason\":\"cpu: batches stay on the host") &&
            contains(json, "\"gpu_decode\":{") && contains(json, "\"where\":\"cpu\""),
        "decode=auto with host batches: the CPU decodes, the stats JSON says why");
  rf_free(json);
  rf_loader_close(l);
  const char* const cpu_kv[] = {"batch_size", "4", "size", "32", "decode", "cpu"};
  l = open_loader("good", 3, cpu_kv);
  json = l != NULL ? rf_loader_stats_json(l) : NULL;
  check(contains(json, "\"decode_reason\":\"asked\""), "decode=cpu: reported as asked");
  rf_free(json);
  rf_loader_close(l);
}

/* Whole epochs of the good folder (8 photos, 2 classes) at batch_size 3. */
static void check_epoch(const char* output, rf_dtype dtype, rf_layout layout, size_t elem) {
  const char* const kv[] = {"batch_size", "3", "size", "32", "seed", "7", "output", output};
  char what[256];
  rf_loader* l = open_loader("good", 4, kv);
  if (l == NULL) return;
  const size_t expected_batches = rf_loader_batches_per_epoch(l);
  size_t batches = 0, samples = 0, per_class[2] = {0, 0};
  int shapes_ok = 1, labels_ok = 1, values_ok = 1, order_ok = 1;
  rf_batch* b;
  int rc;
  while ((rc = rf_loader_next(l, &b)) == 1) {
    int64_t s[4];
    rf_batch_shape(b, s);
    const size_t n = rf_batch_size(b);
    const int64_t want[4] = {(int64_t)n, layout == RF_NCHW ? 3 : 32, 32, layout == RF_NCHW ? 32 : 3};
    shapes_ok = shapes_ok && memcmp(s, want, sizeof want) == 0 && rf_batch_dtype(b) == dtype &&
                rf_batch_layout(b) == layout && rf_batch_nbytes(b) == n * 3 * 32 * 32 * elem &&
                !rf_batch_on_device(b) && rf_batch_images(b) != NULL;
    order_ok = order_ok && rf_batch_number(b) == batches && rf_batch_epoch(b) == 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t label = rf_batch_labels(b)[i];
      labels_ok = labels_ok && (label == 0 || label == 1) && rf_batch_indices(b)[i] < 8;
      if (label == 0 || label == 1) ++per_class[label];
    }
    if (dtype == RF_FLOAT32) {
      const float* v = rf_batch_images(b);
      for (size_t i = 0; i < n * 3 * 32 * 32; ++i) values_ok = values_ok && isfinite(v[i]) && fabsf(v[i]) <= 3.0f;
    }
    samples += n;
    ++batches;
    rf_batch_release(b);
  }
  snprintf(what, sizeof what, "%s: epoch ends with 0 after %zu batches (batches_per_epoch %zu)", output, batches,
           expected_batches);
  check(rc == 0 && batches == expected_batches && expected_batches == 3, what);
  snprintf(what, sizeof what, "%s: %zu samples delivered, 4 per class", output, samples);
  check(samples == 8 && per_class[0] == 4 && per_class[1] == 4, what);
  snprintf(what, sizeof what, "%s: shape, dtype, layout, bytes; batch numbers in order", output);
  check(shapes_ok && order_ok, what);
  check(labels_ok, "labels in [0, 2), indices in [0, 8)");
  if (dtype == RF_FLOAT32) check(values_ok, "float32 values finite and normalized (|v| <= 3)");
  check(rf_loader_next(l, &b) == 1 && rf_batch_epoch(b) == 1 && rf_batch_number(b) == 0,
        "the call after the end starts epoch 1");
  rf_batch_release(b);
  check(rf_loader_set_epoch(l, 5) == 0 && rf_loader_next(l, &b) == 1 && rf_batch_epoch(b) == 5 &&
            rf_batch_number(b) == 0,
        "rf_loader_set_epoch(5): next batch is epoch 5, batch 0");
  rf_batch_release(b);
  char* json = rf_loader_stats_json(l);
  check(contains(json, "\"batches\":5") && contains(json, "\"skipped\":[]"),
        "stats JSON counts 5 batches, none skipped");
  rf_free(json);
  rf_loader_close(l);
}

/* 1 when the epoch's dataset indices are 0..7 in order, 0 when not, -1 on an error. */
static int epoch_in_order(const char* pipeline, const char* shuffle) {
  const char* const kv[] = {"batch_size", "3", "size", "32", "seed", "7", "pipeline", pipeline, "shuffle", shuffle};
  rf_loader* l = open_loader("good", shuffle != NULL ? 5 : 4, kv);
  if (l == NULL) return -1;
  rf_batch* b;
  int rc, in_order = 1;
  size_t next = 0;
  while ((rc = rf_loader_next(l, &b)) == 1) {
    for (size_t i = 0; i < rf_batch_size(b); ++i, ++next) in_order = in_order && rf_batch_indices(b)[i] == next;
    rf_batch_release(b);
  }
  rf_loader_close(l);
  return rc == 0 && next == 8 ? in_order : -1;
}

/* The presets choose shuffling (train: on, val: off); an explicit shuffle wins. */
static void check_shuffle(void) {
  check(epoch_in_order("train", NULL) == 0, "train preset shuffles");
  check(epoch_in_order("val", NULL) == 1, "val preset keeps dataset order");
  check(epoch_in_order("train", "0") == 1, "train with shuffle=0 keeps dataset order");
  check(epoch_in_order("val", "1") == 0, "val with shuffle=1 shuffles");
}

static int same_batch(const rf_batch* x, const rf_batch* y) {
  const size_t n = rf_batch_size(x);
  return n > 0 && n == rf_batch_size(y) && rf_batch_epoch(x) == rf_batch_epoch(y) &&
         rf_batch_number(x) == rf_batch_number(y) && rf_batch_nbytes(x) == rf_batch_nbytes(y) &&
         memcmp(rf_batch_labels(x), rf_batch_labels(y), n * sizeof(int64_t)) == 0 &&
         memcmp(rf_batch_indices(x), rf_batch_indices(y), n * sizeof(size_t)) == 0 &&
         memcmp(rf_batch_images(x), rf_batch_images(y), rf_batch_nbytes(x)) == 0;
}

/* Loader A: epoch 0, then batch 0 of epoch 1, state, batch 1. Loader B
 * resumed from that state gives A's batch 1 exactly (shuffled, augmented). */
static void check_resume(void) {
  const char* const kv[] = {"batch_size", "3", "size", "32", "seed", "11", "shuffle", "1"};
  rf_loader* a = open_loader("good", 4, kv);
  if (a == NULL) return;
  rf_batch* b;
  while (rf_loader_next(a, &b) == 1) rf_batch_release(b);
  rf_batch* first = NULL;
  rf_batch* second = NULL;
  rf_state st;
  memset(&st, 0, sizeof st);
  const int ok = rf_loader_next(a, &first) == 1 && rf_loader_state(a, &st) == 0 && rf_loader_next(a, &second) == 1;
  check(ok && st.seed == 11 && st.epoch == 1 && st.next_batch == 1 && st.rank == 0 && st.world_size == 1,
        "state after epoch 1 batch 0: seed 11, epoch 1, next_batch 1, rank 0 of 1");
  rf_loader_close(a); /* first and second must outlive it */

  rf_options* o = options_for("good", 4, kv);
  rf_loader* r = NULL;
  if (o != NULL && rf_options_set_resume(o, &st) == 0) r = rf_loader_open(o);
  check(r != NULL, "a loader resumed from that state opens");
  rf_batch* resumed = NULL;
  check(r != NULL && rf_loader_next(r, &resumed) == 1 && second != NULL && same_batch(resumed, second),
        "resumed loader's first batch == original's epoch 1 batch 1 (labels, indices, image bytes)");
  check(first != NULL && rf_batch_number(first) == 0 && rf_batch_labels(first)[0] <= 1,
        "a batch held across rf_loader_close stays readable");
  rf_batch_release(first);
  rf_batch_release(second);
  rf_batch_release(resumed);
  rf_loader_close(r);

  st.seed = 12;
  rf_options_set_resume(o, &st);
  rf_loader* wrong = o != NULL ? rf_loader_open(o) : NULL;
  check(wrong == NULL && contains(rf_last_error(), "seed"), "resume state with another seed refused");
  rf_loader_close(wrong);
  rf_options_free(o);
}

/* bad/: a/astronaut, a/chelsea, a/garbage, b/hubble, b/rocket (in this order without shuffle). */
static void check_errors(void) {
  const char* const fail_kv[] = {"batch_size", "2", "size", "32", "pipeline", "val", "on_error", "fail"};
  rf_loader* l = open_loader("bad", 4, fail_kv);
  if (l != NULL) {
    rf_batch* b;
    int rc, delivered = 0;
    while ((rc = rf_loader_next(l, &b)) == 1) {
      ++delivered;
      rf_batch_release(b);
    }
    check(rc == -1 && delivered == 1, "on_error=fail: batch 0 delivered, then -1");
    check(contains(rf_last_error(), "garbage.jpg"), "the error names garbage.jpg");
    printf("       (%s)\n", rf_last_error());
    check(rf_loader_next(l, &b) == -1 && b == NULL, "after an error, next is -1 again");
    check(rf_loader_set_epoch(l, 0) == 0 && rf_loader_next(l, &b) == 1 && rf_batch_size(b) == 2,
          "rf_loader_set_epoch clears the error: batch 0 again");
    rf_batch_release(b);
    rf_loader_close(l);
  }

  const char* const skip_kv[] = {"batch_size", "2", "size", "32", "pipeline", "val", "on_error", "skip"};
  l = open_loader("bad", 4, skip_kv);
  if (l == NULL) return;
  rf_batch* b;
  int rc;
  size_t samples = 0;
  while ((rc = rf_loader_next(l, &b)) == 1) {
    samples += rf_batch_size(b);
    rf_batch_release(b);
  }
  check(rc == 0 && samples == 4, "on_error=skip: the epoch completes with the 4 good samples");
  char* json = rf_loader_stats_json(l);
  check(contains(json, "\"skipped\":[{") && contains(json, "garbage.jpg"),
        "stats JSON's skipped list names garbage.jpg");
  rf_free(json);
  rf_loader_close(l);
}

/* Valid UTF-8 (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF). */
static int valid_utf8(const char* text) {
  const unsigned char* p = (const unsigned char*)text;
  while (*p != 0) {
    int n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (*p < 0x80) n = 1;
    else if (*p >= 0xC2 && *p <= 0xDF) n = 2;
    else if (*p >= 0xE0 && *p <= 0xEF) n = 3, lo = *p == 0xE0 ? 0xA0 : 0x80, hi = *p == 0xED ? 0x9F : 0xBF;
    else if (*p >= 0xF0 && *p <= 0xF4) n = 4, lo = *p == 0xF0 ? 0x90 : 0x80, hi = *p == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    for (int i = 1; i < n; ++i)
      if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xBF)) return 0;
    p += n;
  }
  return 1;
}

/* File names are bytes: latin1/{a,b\xE9} (a class folder named in Latin-1),
 * a photo each, and a/bad\xE9<TAB>.ppm whose data holds the token 1\xE00. The
 * stats JSON stays valid UTF-8: the name as \udcNN (surrogateescape), the
 * reason quoting the token as \xe0. */
static void check_hostile_names(void) {
  static const char pnm[] = "P3\n2 1\n255\n1\xE0" "0 0 0 0 0 0\n";
  const int made = make_dir("latin1") && make_dir("latin1/a") && make_dir("latin1/b\xE9") &&
                   copy_photo("latin1/a", "astronaut.jpg") && copy_photo("latin1/b\xE9", "coffee.jpg") &&
                   write_file("latin1/a/bad\xE9\t.ppm", pnm, sizeof pnm - 1);
  if (!check(made, "an ImageFolder with Latin-1 names created")) return;
  const char* const kv[] = {"batch_size", "2", "size", "32", "pipeline", "val", "on_error", "skip"};
  rf_loader* l = open_loader("latin1", 4, kv);
  if (l == NULL) return;
  rf_batch* b;
  int rc;
  size_t samples = 0;
  while ((rc = rf_loader_next(l, &b)) == 1) {
    samples += rf_batch_size(b);
    rf_batch_release(b);
  }
  check(rc == 0 && samples == 2, "Latin-1 names: the 2 good samples are delivered");
  char* json = rf_loader_stats_json(l);
  check(json != NULL && valid_utf8(json), "stats JSON over a Latin-1 name and hostile bytes is valid UTF-8");
  check(contains(json, "latin1/a/bad\\udce9\\t.ppm\""), "the name is written as surrogateescape (\\udce9)");
  check(contains(json, "invalid token '1\\\\xe00' in image data"), "the reason quotes the token escaped");
  if (json != NULL) printf("       (%s)\n", strstr(json, "\"skipped\""));
  rf_free(json);
  rf_loader_close(l);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <tests/data/image>\n", argv[0]);
    return 2;
  }
  path_join(g_photos, sizeof g_photos, argv[1], "photos");
  strcpy(g_root, "/tmp/ringfeed_c_api_XXXXXX");
  if (mkdtemp(g_root) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  char index_dir[4096];
  path_join(index_dir, sizeof index_dir, g_root, "index");
  setenv("RINGFEED_CACHE_DIR", index_dir, 1); /* dataset indexes stay in the scratch dir */

  check(rf_version() != NULL && rf_version()[0] != '\0', "rf_version");
  check(rf_c99_header_check(), "ringfeed.h compiles as C99 (second translation unit)");
  check(rf_last_error() != NULL && rf_last_error()[0] == '\0', "no error before any failure");
  if (check(make_datasets(), "scratch ImageFolders created")) {
    check_options();
    check_decode();
    check_epoch("float32", RF_FLOAT32, RF_NCHW, 4);
    check_epoch("float16", RF_FLOAT16, RF_NCHW, 2);
    check_epoch("bfloat16", RF_BFLOAT16, RF_NCHW, 2);
    check_epoch("float16_nhwc", RF_FLOAT16, RF_NHWC, 2);
    check_epoch("bfloat16_nhwc", RF_BFLOAT16, RF_NHWC, 2);
    check_epoch("uint8", RF_UINT8, RF_NHWC, 1);
    check_shuffle();
    check_resume();
    check_errors();
    check_hostile_names();
  }
  nftw(g_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
