/* The NBD wire protocol as raidd speaks it: fixed newstyle handshake,
 * simple and structured replies, no TLS, no extended headers.
 *
 * The reference is the protocol document of the NBD project
 * (NetworkBlockDevice/nbd, doc/proto.md).  Every integer on the wire is
 * big-endian; the structs below are the exact wire layouts (packed, sizes
 * pinned by static_assert) and hold big-endian values: convert with
 * htobe*()/be*toh() at the point of use.
 */
#ifndef RAIDD_NBD_PROTO_H
#define RAIDD_NBD_PROTO_H

#include <assert.h>
#include <stdint.h>

/* ---- handshake ---------------------------------------------------------- */

#define NBD_MAGIC               UINT64_C(0x4e42444d41474943)  /* "NBDMAGIC" */
#define NBD_IHAVEOPT            UINT64_C(0x49484156454f5054)  /* "IHAVEOPT" */
#define NBD_REP_MAGIC           UINT64_C(0x0003e889045565a9)

/* Handshake flags (server, 16 bits) and client flags (32 bits). */
#define NBD_FLAG_FIXED_NEWSTYLE (1u << 0)
#define NBD_FLAG_NO_ZEROES      (1u << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE NBD_FLAG_FIXED_NEWSTYLE
#define NBD_FLAG_C_NO_ZEROES    NBD_FLAG_NO_ZEROES

/* Options. */
#define NBD_OPT_EXPORT_NAME       1
#define NBD_OPT_ABORT             2
#define NBD_OPT_LIST              3
#define NBD_OPT_STARTTLS          5
#define NBD_OPT_INFO              6
#define NBD_OPT_GO                7
#define NBD_OPT_STRUCTURED_REPLY  8
#define NBD_OPT_LIST_META_CONTEXT 9
#define NBD_OPT_SET_META_CONTEXT  10
#define NBD_OPT_EXTENDED_HEADERS  11

/* Option replies. */
#define NBD_REP_ACK             1u
#define NBD_REP_SERVER          2u
#define NBD_REP_INFO            3u
#define NBD_REP_META_CONTEXT    4u
#define NBD_REP_FLAG_ERROR      (1u << 31)
#define NBD_REP_ERR_UNSUP       (NBD_REP_FLAG_ERROR | 1u)
#define NBD_REP_ERR_POLICY      (NBD_REP_FLAG_ERROR | 2u)
#define NBD_REP_ERR_INVALID     (NBD_REP_FLAG_ERROR | 3u)
#define NBD_REP_ERR_PLATFORM    (NBD_REP_FLAG_ERROR | 4u)
#define NBD_REP_ERR_TLS_REQD    (NBD_REP_FLAG_ERROR | 5u)
#define NBD_REP_ERR_UNKNOWN     (NBD_REP_FLAG_ERROR | 6u)
#define NBD_REP_ERR_SHUTDOWN    (NBD_REP_FLAG_ERROR | 7u)
#define NBD_REP_ERR_BLOCK_SIZE_REQD (NBD_REP_FLAG_ERROR | 8u)
#define NBD_REP_ERR_TOO_BIG     (NBD_REP_FLAG_ERROR | 9u)

/* NBD_REP_INFO types (16 bits). */
#define NBD_INFO_EXPORT         0
#define NBD_INFO_NAME           1
#define NBD_INFO_DESCRIPTION    2
#define NBD_INFO_BLOCK_SIZE     3

/* Transmission flags (16 bits). */
#define NBD_FLAG_HAS_FLAGS         (1u << 0)
#define NBD_FLAG_READ_ONLY         (1u << 1)
#define NBD_FLAG_SEND_FLUSH        (1u << 2)
#define NBD_FLAG_SEND_FUA          (1u << 3)
#define NBD_FLAG_ROTATIONAL        (1u << 4)
#define NBD_FLAG_SEND_TRIM         (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_SEND_DF           (1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN    (1u << 8)
#define NBD_FLAG_SEND_RESIZE       (1u << 9)
#define NBD_FLAG_SEND_CACHE        (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO    (1u << 11)

/* Longest string (export name, description) the protocol allows. */
#define NBD_MAX_STRING 4096

struct nbd_hello {                 /* server's first message */
  uint64_t magic;                  /* NBD_MAGIC */
  uint64_t version;                /* NBD_IHAVEOPT */
  uint16_t hflags;                 /* NBD_FLAG_FIXED_NEWSTYLE | ... */
} __attribute__((packed));
static_assert(sizeof(struct nbd_hello) == 18, "nbd_hello");

struct nbd_option {                /* client option header, then LEN bytes */
  uint64_t magic;                  /* NBD_IHAVEOPT */
  uint32_t option;                 /* NBD_OPT_* */
  uint32_t len;
} __attribute__((packed));
static_assert(sizeof(struct nbd_option) == 16, "nbd_option");

struct nbd_option_reply {          /* server option reply, then LEN bytes */
  uint64_t magic;                  /* NBD_REP_MAGIC */
  uint32_t option;
  uint32_t reply;                  /* NBD_REP_* */
  uint32_t len;
} __attribute__((packed));
static_assert(sizeof(struct nbd_option_reply) == 20, "nbd_option_reply");

struct nbd_export_name_reply {     /* answer to NBD_OPT_EXPORT_NAME */
  uint64_t size;                   /* bytes */
  uint16_t tflags;                 /* NBD_FLAG_* transmission flags */
  uint8_t zeroes[124];             /* omitted with NBD_FLAG_C_NO_ZEROES */
} __attribute__((packed));
static_assert(sizeof(struct nbd_export_name_reply) == 134, "export_name_reply");

struct nbd_info_export {           /* NBD_REP_INFO, NBD_INFO_EXPORT */
  uint16_t info;
  uint64_t size;
  uint16_t tflags;
} __attribute__((packed));
static_assert(sizeof(struct nbd_info_export) == 12, "nbd_info_export");

struct nbd_info_block_size {       /* NBD_REP_INFO, NBD_INFO_BLOCK_SIZE */
  uint16_t info;
  uint32_t minimum;                /* bytes, power of two */
  uint32_t preferred;              /* bytes, power of two >= minimum */
  uint32_t maximum;                /* bytes, multiple of minimum */
} __attribute__((packed));
static_assert(sizeof(struct nbd_info_block_size) == 14, "nbd_info_block_size");

/* ---- transmission ---------------------------------------------------------- */

#define NBD_REQUEST_MAGIC          0x25609513u
#define NBD_SIMPLE_REPLY_MAGIC     0x67446698u
#define NBD_STRUCTURED_REPLY_MAGIC 0x668e33efu

/* Commands (16 bits). */
#define NBD_CMD_READ          0
#define NBD_CMD_WRITE         1
#define NBD_CMD_DISC          2
#define NBD_CMD_FLUSH         3
#define NBD_CMD_TRIM          4
#define NBD_CMD_CACHE         5
#define NBD_CMD_WRITE_ZEROES  6
#define NBD_CMD_BLOCK_STATUS  7

/* Command flags (16 bits). */
#define NBD_CMD_FLAG_FUA        (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE    (1u << 1)
#define NBD_CMD_FLAG_DF         (1u << 2)
#define NBD_CMD_FLAG_REQ_ONE    (1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO  (1u << 4)

/* Structured reply flags and chunk types. */
#define NBD_REPLY_FLAG_DONE          (1u << 0)
#define NBD_REPLY_TYPE_NONE          0
#define NBD_REPLY_TYPE_OFFSET_DATA   1
#define NBD_REPLY_TYPE_OFFSET_HOLE   2
#define NBD_REPLY_TYPE_BLOCK_STATUS  5
#define NBD_REPLY_TYPE_ERROR         ((1u << 15) | 1u)
#define NBD_REPLY_TYPE_ERROR_OFFSET  ((1u << 15) | 2u)

/* Error values on the wire (not the host's errno numbers). */
#define NBD_SUCCESS    0
#define NBD_EPERM      1
#define NBD_EIO        5
#define NBD_ENOMEM     12
#define NBD_EINVAL     22
#define NBD_ENOSPC     28
#define NBD_EOVERFLOW  75
#define NBD_ENOTSUP    95
#define NBD_ESHUTDOWN  108

struct nbd_request {
  uint32_t magic;                  /* NBD_REQUEST_MAGIC */
  uint16_t flags;                  /* NBD_CMD_FLAG_* */
  uint16_t type;                   /* NBD_CMD_* */
  uint64_t cookie;                 /* echoed in the reply, opaque */
  uint64_t offset;                 /* bytes */
  uint32_t count;                  /* bytes; the payload length of WRITE */
} __attribute__((packed));
static_assert(sizeof(struct nbd_request) == 28, "nbd_request");

struct nbd_simple_reply {
  uint32_t magic;                  /* NBD_SIMPLE_REPLY_MAGIC */
  uint32_t error;                  /* NBD_E* */
  uint64_t cookie;
} __attribute__((packed));
static_assert(sizeof(struct nbd_simple_reply) == 16, "nbd_simple_reply");

struct nbd_structured_reply {      /* then LENGTH bytes of chunk payload */
  uint32_t magic;                  /* NBD_STRUCTURED_REPLY_MAGIC */
  uint16_t flags;                  /* NBD_REPLY_FLAG_* */
  uint16_t type;                   /* NBD_REPLY_TYPE_* */
  uint64_t cookie;
  uint32_t length;
} __attribute__((packed));
static_assert(sizeof(struct nbd_structured_reply) == 20, "nbd_structured_reply");

struct nbd_chunk_error {           /* payload of NBD_REPLY_TYPE_ERROR */
  uint32_t error;                  /* NBD_E* */
  uint16_t msglen;                 /* then MSGLEN bytes of UTF-8 */
} __attribute__((packed));
static_assert(sizeof(struct nbd_chunk_error) == 6, "nbd_chunk_error");

#endif /* RAIDD_NBD_PROTO_H */
