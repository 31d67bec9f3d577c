#ifndef C_COURIER_ZLIB_H
#define C_COURIER_ZLIB_H

#include <stddef.h>
#include <stdint.h>

/// Compresses `input` in one go into `output` (capacity `*outputLength`, which receives the
/// compressed length). `windowBits` is zlib's: 15 + 16 for gzip, 15 for the zlib format that
/// HTTP calls "deflate". Returns 0 on success, a zlib error code otherwise.
int courier_compress(const uint8_t *input, size_t inputLength, uint8_t *output, size_t *outputLength,
                     int windowBits);

/// An upper bound of the compressed size of `inputLength` bytes, with room for a gzip header.
size_t courier_compress_bound(size_t inputLength);

/// Decompresses `input` into `output` (capacity `*outputLength`, which receives the decompressed
/// length). `windowBits` as for `courier_compress`; 15 + 32 detects gzip or zlib. Returns 0 on
/// success, a zlib error code otherwise (`Z_BUF_ERROR` when `output` is too small).
int courier_decompress(const uint8_t *input, size_t inputLength, uint8_t *output, size_t *outputLength,
                       int windowBits);

/// Continues the CRC-32 (zlib's, the one gzip and PNG use) `crc` over `length` bytes at `bytes`.
/// Start with 0.
uint32_t courier_crc32(uint32_t crc, const uint8_t *bytes, size_t length);

/// A streaming compressor (zlib's deflate), for bodies compressed as they are sent.
typedef struct courier_deflater courier_deflater;

/// Makes a streaming compressor; `windowBits` as for `courier_compress`. NULL when zlib cannot
/// allocate one.
courier_deflater *courier_deflater_make(int windowBits);

/// Compresses from `input` (`inputLength` bytes; `*consumed` receives how many were taken) into
/// `output` (`outputCapacity` bytes; `*produced` receives how many were written). With `finish`
/// set, the input is the last and the stream is ended. Returns 1 once the stream has ended, 0 when
/// it wants more input or more room for output, a negative zlib error otherwise.
int courier_deflater_run(courier_deflater *deflater, const uint8_t *input, size_t inputLength, size_t *consumed,
                         uint8_t *output, size_t outputCapacity, size_t *produced, int finish);

/// Frees a compressor made by `courier_deflater_make`.
void courier_deflater_free(courier_deflater *deflater);

/// A streaming decompressor (zlib's inflate, gzip or zlib framing detected), for response
/// bodies decompressed as they arrive.
typedef struct courier_inflater courier_inflater;

/// Makes a streaming decompressor that detects gzip or zlib framing. NULL when zlib cannot
/// allocate one.
courier_inflater *courier_inflater_make(void);

/// Decompresses from `input` (`inputLength` bytes; `*consumed` receives how many were taken) into
/// `output` (`outputCapacity` bytes; `*produced` receives how many were written). Returns 1 once
/// the compressed stream has ended, 0 when it wants more input or more room for output, a
/// negative zlib error otherwise.
int courier_inflater_run(courier_inflater *inflater, const uint8_t *input, size_t inputLength, size_t *consumed,
                         uint8_t *output, size_t outputCapacity, size_t *produced);

/// Frees a decompressor made by `courier_inflater_make` or `courier_raw_inflater_make`.
void courier_inflater_free(courier_inflater *inflater);

/// Compresses as `courier_deflater_run` does, then (once all the input is taken) flushes with
/// `Z_SYNC_FLUSH`, ending on a byte boundary (RFC 7692's messages). Returns 0, or a negative
/// zlib error. Call again while the output filled all of `outputCapacity`.
int courier_deflater_sync_flush(courier_deflater *deflater, const uint8_t *input, size_t inputLength, size_t *consumed,
                                uint8_t *output, size_t outputCapacity, size_t *produced);

/// Makes a decompressor of raw deflate data (no zlib or gzip framing) with a window of
/// `windowBits` (8 to 15). NULL when zlib cannot allocate one.
courier_inflater *courier_raw_inflater_make(int windowBits);

#endif
