#include "CCourierZlib.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

size_t courier_compress_bound(size_t inputLength) {
    return (size_t)compressBound((uLong)inputLength) + 32;
}

int courier_compress(const uint8_t *input, size_t inputLength, uint8_t *output, size_t *outputLength,
                     int windowBits) {
    z_stream stream;
    memset(&stream, 0, sizeof(stream));
    int status = deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
    if (status != Z_OK) {
        return status;
    }
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)inputLength;
    stream.next_out = output;
    stream.avail_out = (uInt)*outputLength;
    status = deflate(&stream, Z_FINISH);
    *outputLength = stream.total_out;
    deflateEnd(&stream);
    return status == Z_STREAM_END ? 0 : (status == Z_OK ? Z_BUF_ERROR : status);
}

int courier_decompress(const uint8_t *input, size_t inputLength, uint8_t *output, size_t *outputLength,
                       int windowBits) {
    z_stream stream;
    memset(&stream, 0, sizeof(stream));
    int status = inflateInit2(&stream, windowBits);
    if (status != Z_OK) {
        return status;
    }
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)inputLength;
    stream.next_out = output;
    stream.avail_out = (uInt)*outputLength;
    status = inflate(&stream, Z_FINISH);
    *outputLength = stream.total_out;
    inflateEnd(&stream);
    return status == Z_STREAM_END ? 0 : (status == Z_OK ? Z_BUF_ERROR : status);
}

uint32_t courier_crc32(uint32_t crc, const uint8_t *bytes, size_t length) {
    uLong value = crc;
    // zlib's crc32 takes a uInt length: feed larger inputs in slices.
    while (length > 0) {
        uInt slice = length > (1u << 30) ? (1u << 30) : (uInt)length;
        value = crc32(value, bytes, slice);
        bytes += slice;
        length -= slice;
    }
    return (uint32_t)value;
}

struct courier_deflater {
    z_stream stream;
};

courier_deflater *courier_deflater_make(int windowBits) {
    courier_deflater *deflater = calloc(1, sizeof(courier_deflater));
    if (deflater == NULL) {
        return NULL;
    }
    if (deflateInit2(&deflater->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(deflater);
        return NULL;
    }
    return deflater;
}

int courier_deflater_run(courier_deflater *deflater, const uint8_t *input, size_t inputLength, size_t *consumed,
                         uint8_t *output, size_t outputCapacity, size_t *produced, int finish) {
    z_stream *stream = &deflater->stream;
    // zlib counts in uInt: larger inputs and outputs go in slices, over several calls.
    uInt inputSlice = inputLength > (1u << 30) ? (1u << 30) : (uInt)inputLength;
    uInt outputSlice = outputCapacity > (1u << 30) ? (1u << 30) : (uInt)outputCapacity;
    stream->next_in = (Bytef *)input;
    stream->avail_in = inputSlice;
    stream->next_out = output;
    stream->avail_out = outputSlice;
    int lastSlice = inputSlice == inputLength;
    int status = deflate(stream, finish && lastSlice ? Z_FINISH : Z_NO_FLUSH);
    *consumed = inputSlice - stream->avail_in;
    *produced = outputSlice - stream->avail_out;
    if (status == Z_STREAM_END) {
        return 1;
    }
    if (status == Z_OK || status == Z_BUF_ERROR) {
        return 0;
    }
    return status < 0 ? status : -1;
}

void courier_deflater_free(courier_deflater *deflater) {
    if (deflater == NULL) {
        return;
    }
    deflateEnd(&deflater->stream);
    free(deflater);
}

struct courier_inflater {
    z_stream stream;
};

courier_inflater *courier_inflater_make(void) {
    courier_inflater *inflater = calloc(1, sizeof(courier_inflater));
    if (inflater == NULL) {
        return NULL;
    }
    // 15 + 32: the largest window, gzip or zlib framing detected from the header.
    if (inflateInit2(&inflater->stream, 15 + 32) != Z_OK) {
        free(inflater);
        return NULL;
    }
    return inflater;
}

int courier_inflater_run(courier_inflater *inflater, const uint8_t *input, size_t inputLength, size_t *consumed,
                         uint8_t *output, size_t outputCapacity, size_t *produced) {
    z_stream *stream = &inflater->stream;
    uInt inputSlice = inputLength > (1u << 30) ? (1u << 30) : (uInt)inputLength;
    uInt outputSlice = outputCapacity > (1u << 30) ? (1u << 30) : (uInt)outputCapacity;
    stream->next_in = (Bytef *)input;
    stream->avail_in = inputSlice;
    stream->next_out = output;
    stream->avail_out = outputSlice;
    int status = inflate(stream, Z_NO_FLUSH);
    *consumed = inputSlice - stream->avail_in;
    *produced = outputSlice - stream->avail_out;
    stream->next_in = NULL;
    stream->avail_in = 0;
    stream->next_out = NULL;
    stream->avail_out = 0;
    if (status == Z_STREAM_END) {
        return 1;
    }
    if (status == Z_OK || status == Z_BUF_ERROR) {
        return 0;
    }
    return status < 0 ? status : -1;
}

void courier_inflater_free(courier_inflater *inflater) {
    if (inflater == NULL) {
        return;
    }
    inflateEnd(&inflater->stream);
    free(inflater);
}

int courier_deflater_sync_flush(courier_deflater *deflater, const uint8_t *input, size_t inputLength, size_t *consumed,
                                uint8_t *output, size_t outputCapacity, size_t *produced) {
    z_stream *stream = &deflater->stream;
    uInt inputSlice = inputLength > (1u << 30) ? (1u << 30) : (uInt)inputLength;
    uInt outputSlice = outputCapacity > (1u << 30) ? (1u << 30) : (uInt)outputCapacity;
    stream->next_in = (Bytef *)input;
    stream->avail_in = inputSlice;
    stream->next_out = output;
    stream->avail_out = outputSlice;
    int status = deflate(stream, inputSlice == inputLength ? Z_SYNC_FLUSH : Z_NO_FLUSH);
    *consumed = inputSlice - stream->avail_in;
    *produced = outputSlice - stream->avail_out;
    stream->next_in = NULL;
    stream->avail_in = 0;
    stream->next_out = NULL;
    stream->avail_out = 0;
    if (status == Z_OK || status == Z_BUF_ERROR) {
        return 0;
    }
    return status < 0 ? status : -1;
}

courier_inflater *courier_raw_inflater_make(int windowBits) {
    courier_inflater *inflater = calloc(1, sizeof(courier_inflater));
    if (inflater == NULL) {
        return NULL;
    }
    if (inflateInit2(&inflater->stream, -windowBits) != Z_OK) {
        free(inflater);
        return NULL;
    }
    return inflater;
}
