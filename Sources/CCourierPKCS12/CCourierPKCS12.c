#include "CCourierPKCS12.h"

// swift-nio-ssl's BoringSSL, by the names its symbol prefix gives them (CNIOBoringSSL_…). The
// types are opaque here.
typedef struct pkcs12_st PKCS12;
typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_st X509;
typedef struct stack_st_X509 STACK_OF_X509;

extern PKCS12 *CNIOBoringSSL_d2i_PKCS12(PKCS12 **out_p12, const uint8_t **ber_bytes, size_t ber_len);
extern int CNIOBoringSSL_PKCS12_parse(const PKCS12 *p12, const char *password, EVP_PKEY **out_pkey, X509 **out_cert,
                                      STACK_OF_X509 **out_ca_certs);
extern void CNIOBoringSSL_PKCS12_free(PKCS12 *p12);
extern void CNIOBoringSSL_EVP_PKEY_free(EVP_PKEY *pkey);
extern void CNIOBoringSSL_X509_free(X509 *x509);
extern void CNIOBoringSSL_ERR_clear_error(void);

enum courier_pkcs12_result courier_pkcs12_check(const uint8_t *bytes, size_t length, const char *passphrase) {
    const uint8_t *cursor = bytes;
    PKCS12 *p12 = CNIOBoringSSL_d2i_PKCS12(NULL, &cursor, length);
    if (p12 == NULL) {
        CNIOBoringSSL_ERR_clear_error();
        return COURIER_PKCS12_UNREADABLE;
    }
    EVP_PKEY *key = NULL;
    X509 *certificate = NULL;
    // No stack for the other certificates: PKCS12_parse frees them itself.
    int parsed = CNIOBoringSSL_PKCS12_parse(p12, passphrase, &key, &certificate, NULL);
    CNIOBoringSSL_PKCS12_free(p12);
    enum courier_pkcs12_result result;
    if (!parsed) {
        result = COURIER_PKCS12_UNREADABLE;
    } else if (key == NULL) {
        result = COURIER_PKCS12_NO_KEY;
    } else if (certificate == NULL) {
        result = COURIER_PKCS12_NO_CERTIFICATE;
    } else {
        result = COURIER_PKCS12_USABLE;
    }
    if (key != NULL) CNIOBoringSSL_EVP_PKEY_free(key);
    if (certificate != NULL) CNIOBoringSSL_X509_free(certificate);
    CNIOBoringSSL_ERR_clear_error();
    return result;
}
