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

#endif
