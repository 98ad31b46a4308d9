// Checks an SRTP or SRTCP packet's tag without libsrtp2's replay database.
// See include/share_srtp_verify.h.
//
// Session keys come from the master key and salt through RFC 3711 §4.3's
// key derivation (AES counter mode keyed with the master key, the salt with
// the label in its byte 7 as the counter; key derivation rate 0), as libsrtp2
// derives them; with a 256-bit master key the same derivation runs AES-256
// (RFC 6188). The GCM suites (RFC 7714) pad their 12-byte master salt to
// 14 bytes with zeros for that derivation, as libsrtp2 does.

#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "share_srtp_verify.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

enum { LABEL_RTP_KEY = 0, LABEL_RTP_AUTH = 1, LABEL_RTP_SALT = 2, LABEL_RTCP_KEY = 3, LABEL_RTCP_AUTH = 4,
       LABEL_RTCP_SALT = 5 };

struct share_srtp_verifier {
    int gcm;
    int key_length;              // the master (and GCM session) key: 16 or 32 bytes
    int rtp_tag;                 // HMAC profiles: 10 or 4 bytes; GCM: 16
    uint8_t rtp_auth[20];        // HMAC profiles: the session authentication keys
    uint8_t rtcp_auth[20];
    uint8_t rtp_key[32];         // GCM: the session keys and salts
    uint8_t rtp_salt[12];
    uint8_t rtcp_key[32];
    uint8_t rtcp_salt[12];
};

// Writes `length` bytes of the key derivation's output for `label`, with
// AES-128 or AES-256 as the master key is 16 or 32 bytes.
static int derive(const uint8_t *key, int key_length, const uint8_t salt[14], uint8_t label, uint8_t *out,
                  int length) {
    uint8_t counter[16] = {0};
    memcpy(counter, salt, 14);
    counter[7] ^= label;
    uint8_t zeros[32] = {0};
    int written = 0;
    const EVP_CIPHER *cipher = key_length == 32 ? EVP_aes_256_ctr() : EVP_aes_128_ctr();
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = ctx != NULL && length <= (int)sizeof zeros
          && EVP_EncryptInit_ex(ctx, cipher, NULL, key, counter) == 1
          && EVP_EncryptUpdate(ctx, out, &written, zeros, length) == 1 && written == length;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

share_srtp_verifier *share_srtp_verifier_new(int profile, const uint8_t *master, int master_length) {
    if (profile < SHARE_SRTP_VERIFY_AES_CM_HMAC_SHA1_80 || profile > SHARE_SRTP_VERIFY_AEAD_AES_256_GCM) return NULL;
    int gcm = profile == SHARE_SRTP_VERIFY_AEAD_AES_128_GCM || profile == SHARE_SRTP_VERIFY_AEAD_AES_256_GCM;
    int key_length = profile >= SHARE_SRTP_VERIFY_AES_256_CM_HMAC_SHA1_80 ? 32 : 16;
    int salt_length = gcm ? 12 : 14;
    if (master_length != key_length + salt_length) return NULL;
    share_srtp_verifier *verifier = calloc(1, sizeof *verifier);
    if (verifier == NULL) return NULL;
    uint8_t salt[14] = {0};
    memcpy(salt, master + key_length, (size_t)salt_length);
    verifier->gcm = gcm;
    verifier->key_length = key_length;
    int ok;
    if (gcm) {
        verifier->rtp_tag = 16;
        ok = derive(master, key_length, salt, LABEL_RTP_KEY, verifier->rtp_key, key_length)
          && derive(master, key_length, salt, LABEL_RTP_SALT, verifier->rtp_salt, 12)
          && derive(master, key_length, salt, LABEL_RTCP_KEY, verifier->rtcp_key, key_length)
          && derive(master, key_length, salt, LABEL_RTCP_SALT, verifier->rtcp_salt, 12);
    } else {
        int short_tag = profile == SHARE_SRTP_VERIFY_AES_CM_HMAC_SHA1_32
                     || profile == SHARE_SRTP_VERIFY_AES_256_CM_HMAC_SHA1_32;
        verifier->rtp_tag = short_tag ? 4 : 10;
        ok = derive(master, key_length, salt, LABEL_RTP_AUTH, verifier->rtp_auth, 20)
          && derive(master, key_length, salt, LABEL_RTCP_AUTH, verifier->rtcp_auth, 20);
    }
    OPENSSL_cleanse(salt, sizeof salt);
    if (!ok) {
        share_srtp_verifier_free(verifier);
        return NULL;
    }
    return verifier;
}

void share_srtp_verifier_free(share_srtp_verifier *verifier) {
    if (verifier == NULL) return;
    OPENSSL_cleanse(verifier, sizeof *verifier);
    free(verifier);
}

// HMAC-SHA1 over `first` then `second`, compared with `tag` (constant time).
static int hmac_matches(const uint8_t key[20], const uint8_t *first, size_t first_length, const uint8_t *second,
                        size_t second_length, const uint8_t *tag, int tag_length) {
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned int digest_length = 0;
    HMAC_CTX *ctx = HMAC_CTX_new();
    int ok = ctx != NULL && HMAC_Init_ex(ctx, key, 20, EVP_sha1(), NULL) == 1
          && HMAC_Update(ctx, first, first_length) == 1
          && (second_length == 0 || HMAC_Update(ctx, second, second_length) == 1)
          && HMAC_Final(ctx, digest, &digest_length) == 1 && digest_length >= (unsigned)tag_length;
    HMAC_CTX_free(ctx);
    return ok && CRYPTO_memcmp(digest, tag, (size_t)tag_length) == 0;
}

// AES-GCM (a 16- or 32-byte key): whether `tag` authenticates `aad` and `ciphertext` under `key` and `iv`.
static int gcm_matches(const uint8_t *key, int key_length, const uint8_t iv[12], const uint8_t *aad, int aad_length,
                       const uint8_t *aad_tail, int aad_tail_length, const uint8_t *ciphertext, int length,
                       const uint8_t tag[16]) {
    uint8_t scratch[256];
    int out = 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    const EVP_CIPHER *cipher = key_length == 32 ? EVP_aes_256_gcm() : EVP_aes_128_gcm();
    int ok = ctx != NULL && EVP_DecryptInit_ex(ctx, cipher, NULL, key, iv) == 1
          && EVP_DecryptUpdate(ctx, NULL, &out, aad, aad_length) == 1
          && (aad_tail_length == 0 || EVP_DecryptUpdate(ctx, NULL, &out, aad_tail, aad_tail_length) == 1);
    // The plaintext is not wanted: decrypt through a small scratch buffer.
    for (int done = 0; ok && done < length; done += (int)sizeof scratch) {
        int chunk = length - done < (int)sizeof scratch ? length - done : (int)sizeof scratch;
        ok = EVP_DecryptUpdate(ctx, scratch, &out, ciphertext + done, chunk) == 1;
    }
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) == 1
            && EVP_DecryptFinal_ex(ctx, scratch, &out) == 1;
    EVP_CIPHER_CTX_free(ctx);
    OPENSSL_cleanse(scratch, sizeof scratch);
    return ok;
}

// The length of the RTP header (fixed part, CSRCs, extension), or -1.
static int rtp_header_length(const uint8_t *packet, int length) {
    if (length < 12 || packet[0] >> 6 != 2) return -1;
    int header = 12 + 4 * (packet[0] & 0x0F);
    if (packet[0] & 0x10) {
        if (length < header + 4) return -1;
        header += 4 + 4 * ((packet[header + 2] << 8) | packet[header + 3]);
    }
    return header <= length ? header : -1;
}

int share_srtp_verify_rtp(const share_srtp_verifier *verifier, const uint8_t *packet, int length, uint32_t roc) {
    int header = rtp_header_length(packet, length);
    if (verifier == NULL || header < 0 || length - header < verifier->rtp_tag) return 0;
    int body = length - verifier->rtp_tag;
    if (!verifier->gcm) {
        uint8_t roc_bytes[4] = {roc >> 24, roc >> 16, roc >> 8, roc};
        return hmac_matches(verifier->rtp_auth, packet, (size_t)body, roc_bytes, 4, packet + body, verifier->rtp_tag);
    }
    // RFC 7714 §8.1: IV = (00 00 || SSRC || ROC || SEQ) XOR salt; the header is the AAD.
    uint8_t iv[12] = {0, 0, packet[8], packet[9], packet[10], packet[11], roc >> 24, roc >> 16, roc >> 8, roc,
                      packet[2], packet[3]};
    for (int i = 0; i < 12; i++) iv[i] ^= verifier->rtp_salt[i];
    return gcm_matches(verifier->rtp_key, verifier->key_length, iv, packet, header, NULL, 0, packet + header,
                       body - header, packet + body);
}

int64_t share_srtp_search_rtp_roc(const share_srtp_verifier *verifier, const uint8_t *packet, int length, uint32_t first,
                                  uint32_t last) {
    int header = rtp_header_length(packet, length);
    if (verifier == NULL || header < 0 || length - header < verifier->rtp_tag || first > last) return -1;
    if (verifier->gcm) {
        for (uint64_t roc = first; roc <= last; roc++) {
            if (share_srtp_verify_rtp(verifier, packet, length, (uint32_t)roc)) return (int64_t)roc;
        }
        return -1;
    }
    // RFC 3711 §4.2: the tag is HMAC(auth key, packet || ROC). Hash the
    // packet once; each candidate continues a copy of that state.
    int body = length - verifier->rtp_tag;
    int64_t found = -1;
    HMAC_CTX *hashed = HMAC_CTX_new();
    HMAC_CTX *candidate = HMAC_CTX_new();
    int ok = hashed != NULL && candidate != NULL && HMAC_Init_ex(hashed, verifier->rtp_auth, 20, EVP_sha1(), NULL) == 1
          && HMAC_Update(hashed, packet, (size_t)body) == 1;
    for (uint64_t roc = first; ok && found < 0 && roc <= last; roc++) {
        uint8_t roc_bytes[4] = {roc >> 24, roc >> 16, roc >> 8, roc};
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned int digest_length = 0;
        ok = HMAC_CTX_copy(candidate, hashed) == 1 && HMAC_Update(candidate, roc_bytes, 4) == 1
          && HMAC_Final(candidate, digest, &digest_length) == 1 && digest_length >= (unsigned)verifier->rtp_tag;
        if (ok && CRYPTO_memcmp(digest, packet + body, (size_t)verifier->rtp_tag) == 0) found = (int64_t)roc;
    }
    HMAC_CTX_free(candidate);
    HMAC_CTX_free(hashed);
    return found;
}

int share_srtp_verify_rtcp(const share_srtp_verifier *verifier, const uint8_t *packet, int length) {
    if (verifier == NULL) return 0;
    if (!verifier->gcm) {
        // Header and sender SSRC, ..., E flag and SRTCP index, then the 80-bit tag over all before it.
        if (length < 8 + 4 + 10) return 0;
        return hmac_matches(verifier->rtcp_auth, packet, (size_t)(length - 10), NULL, 0, packet + length - 10, 10);
    }
    // RFC 7714 §9: header and SSRC, ciphertext, 16-byte tag, then E || SRTCP index.
    if (length < 8 + 16 + 4) return 0;
    const uint8_t *trailer = packet + length - 4;
    const uint8_t *tag = trailer - 16;
    uint8_t iv[12] = {0, 0, packet[4], packet[5], packet[6], packet[7], 0, 0,
                      trailer[0] & 0x7F, trailer[1], trailer[2], trailer[3]};
    for (int i = 0; i < 12; i++) iv[i] ^= verifier->rtcp_salt[i];
    int body = (int)(tag - packet);
    if (trailer[0] & 0x80) {
        // Encrypted: the AAD is the first 8 bytes and the trailer.
        return gcm_matches(verifier->rtcp_key, verifier->key_length, iv, packet, 8, trailer, 4, packet + 8, body - 8,
                           tag);
    }
    // Not encrypted: all of it is AAD, the trailer included.
    return gcm_matches(verifier->rtcp_key, verifier->key_length, iv, packet, body, trailer, 4, NULL, 0, tag);
}
