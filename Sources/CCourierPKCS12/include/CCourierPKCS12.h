#ifndef C_COURIER_PKCS12_H
#define C_COURIER_PKCS12_H

// A check of a PKCS#12 bundle before swift-nio-ssl reads it. swift-nio-ssl's
// `NIOSSLPKCS12Bundle` ends the process (`fatalError`) when a bundle that opens holds no private
// key, or no certificate of that key, instead of throwing; this asks the same BoringSSL first.
// The BoringSSL is the one swift-nio-ssl links (its C target is not a product another package
// may name, so its functions are declared here by their prefixed names).

#include <stddef.h>
#include <stdint.h>

/// What `courier_pkcs12_check` found.
enum courier_pkcs12_result {
    COURIER_PKCS12_USABLE = 0,          ///< A private key and a certificate of that key.
    COURIER_PKCS12_UNREADABLE = 1,      ///< Not a PKCS#12 bundle, or the passphrase does not open it.
    COURIER_PKCS12_NO_KEY = 2,          ///< It opens, and holds no private key.
    COURIER_PKCS12_NO_CERTIFICATE = 3,  ///< It opens, and no certificate in it is the key's.
};

/// Opens the bundle of `length` bytes with `passphrase` (NUL-terminated, or NULL for none) and
/// says what it holds; frees everything it made.
enum courier_pkcs12_result courier_pkcs12_check(const uint8_t *bytes, size_t length, const char *passphrase);

#endif
