/* One request of the NBD transmission phase, from its header to its
 * reply: the 28-byte header parsed and checked against the export, the
 * request submitted to the library (raid_aio_*()), and on completion its
 * reply built, simple or structured, and queued on its connection, which
 * sends it (nbd-conn.c). */
#include <config.h>

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbd-internal.h"
#include "nbd-proto.h"

#define BUF_ALIGN       4096

/* ---- helpers --------------------------------------------------------------- */

uint32_t
nbd_errno_to_wire(int err)
{
  switch (err < 0 ? -err : err) {
  case 0: return NBD_SUCCESS;
  case EPERM: case EROFS: return NBD_EPERM;
  case EIO: return NBD_EIO;
  case ENOMEM: return NBD_ENOMEM;
  case EINVAL: return NBD_EINVAL;
  case ENOSPC: case EFBIG: return NBD_ENOSPC;
  case EOVERFLOW: return NBD_EOVERFLOW;
  case ENOTSUP: return NBD_ENOTSUP;
  case ESHUTDOWN: return NBD_ESHUTDOWN;
  default: return NBD_EIO;
  }
}

static const char *
cmd_name(uint16_t type)
{
  switch (type) {
  case NBD_CMD_READ: return "read";
  case NBD_CMD_WRITE: return "write";
  case NBD_CMD_DISC: return "disconnect";
  case NBD_CMD_FLUSH: return "flush";
  case NBD_CMD_TRIM: return "trim";
  case NBD_CMD_CACHE: return "cache";
  case NBD_CMD_WRITE_ZEROES: return "write zeroes";
  case NBD_CMD_BLOCK_STATUS: return "block status";
  default: return "unknown command";
  }
}

void
nbd_req_free(struct nbd_req *r)
{
  struct nbd_conn *c = r->c;

  if (r->buf) {
    free(r->buf);
    c->bytes -= r->count;
    c->w->freed += r->count;
  }
  c->nreqs--;
  free(r);
}

/* ---- building replies --------------------------------------------------------- */

static void __attribute__((format(printf, 3, 4)))
req_set_error(struct nbd_req *r, uint32_t error, const char *fmt, ...)
{
  va_list ap;

  r->error = error;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
}

/* Build the reply in R and queue it on its connection. */
void
nbd_req_reply(struct nbd_req *r)
{
  struct nbd_conn *c = r->c;
  bool data = r->type == NBD_CMD_READ && r->error == 0;

  r->iov_first = 0;
  if (!c->structured) {
    struct nbd_simple_reply s = {
      .magic = htobe32(NBD_SIMPLE_REPLY_MAGIC),
      .error = htobe32(r->error),
      .cookie = r->cookie,           /* opaque: echoed as received */
    };
    memcpy(r->hdr, &s, sizeof s);
    r->iov[0] = (struct iovec){ r->hdr, sizeof s };
    r->niov = 1;
  }
  else if (r->error) {
    size_t msglen = strlen(r->msg);
    struct nbd_structured_reply s = {
      .magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
      .flags = htobe16(NBD_REPLY_FLAG_DONE),
      .type = htobe16(NBD_REPLY_TYPE_ERROR),
      .cookie = r->cookie,
      .length = htobe32(sizeof(struct nbd_chunk_error) + msglen),
    };
    struct nbd_chunk_error e = {
      .error = htobe32(r->error),
      .msglen = htobe16((uint16_t)msglen),
    };
    memcpy(r->hdr, &s, sizeof s);
    memcpy(r->hdr + sizeof s, &e, sizeof e);
    r->iov[0] = (struct iovec){ r->hdr, sizeof s + sizeof e };
    r->iov[1] = (struct iovec){ r->msg, msglen };
    r->niov = msglen ? 2 : 1;
  }
  else {
    struct nbd_structured_reply s = {
      .magic = htobe32(NBD_STRUCTURED_REPLY_MAGIC),
      .flags = htobe16(NBD_REPLY_FLAG_DONE),
      .type = htobe16(data ? NBD_REPLY_TYPE_OFFSET_DATA : NBD_REPLY_TYPE_NONE),
      .cookie = r->cookie,
      .length = htobe32(data ? 8 + r->count : 0),
    };
    uint64_t off = htobe64(r->offset);

    memcpy(r->hdr, &s, sizeof s);
    if (data)
      memcpy(r->hdr + sizeof s, &off, 8);
    r->iov[0] = (struct iovec){ r->hdr, sizeof s + (data ? 8 : 0) };
    r->niov = 1;
  }
  if (data)
    r->iov[r->niov++] = (struct iovec){ r->buf, r->count };

  if (c->dead) {
    nbd_req_free(r);
    nbd_conn_mark_dirty(c);
    return;
  }
  r->next = NULL;
  if (c->out_tail)
    c->out_tail->next = r;
  else
    c->out_head = r;
  c->out_tail = r;
  nbd_conn_mark_dirty(c);
}

/* ---- requests --------------------------------------------------------------------- */

static void
req_done(void *opaque, int result)
{
  struct nbd_req *r = opaque;
  struct nbd_conn *c = r->c;

  if (result == 0 && r->flush_after) {
    r->flush_after = false;
    result = raid_aio_flush(c->w->q, c->a, req_done, r);
    if (result == 0) {
      c->w->need_run = true;
      return;
    }
  }
  c->busy--;
  if (result < 0) {
    req_set_error(r, nbd_errno_to_wire(result), "%s of %u bytes at offset %llu: %s",
                  cmd_name(r->type), r->count, (unsigned long long)r->offset,
                  strerror(-result));
    if (c->errors_logged++ < 10)
      log_warn("nbd: %s (export %s): %s", c->peer, export_name(c->exp), r->msg);
  }
  nbd_req_reply(r);
}

/* Check R against the export: 0 or an NBD_E* with a message set. */
static uint32_t
req_validate(struct nbd_conn *c, struct nbd_req *r)
{
  uint16_t allowed = NBD_CMD_FLAG_FUA;    /* harmless on every command */
  bool writes = false, range_einval = false;
  uint64_t size;

  switch (r->type) {
  case NBD_CMD_READ:
    if (c->structured)
      allowed |= NBD_CMD_FLAG_DF;         /* one chunk is never fragmented */
    range_einval = true;
    break;
  case NBD_CMD_CACHE:
    range_einval = true;
    break;
  case NBD_CMD_TRIM:
    /* Not advertised on RAID 5 (see nbd_export_tflags()): the protocol
     * says a client MUST NOT send it then.  Refused as nbdkit does, not
     * ignored: a success would claim a discard that did not happen. */
    if (!(c->tflags & NBD_FLAG_SEND_TRIM) && !(c->tflags & NBD_FLAG_READ_ONLY)) {
      req_set_error(r, NBD_EINVAL, "trim: not supported on this export (RAID 5: "
                    "use write zeroes)");
      return r->error;
    }
    writes = true;
    break;
  case NBD_CMD_WRITE:
    writes = true;
    break;
  case NBD_CMD_WRITE_ZEROES:
    allowed |= NBD_CMD_FLAG_NO_HOLE;
    writes = true;
    break;
  case NBD_CMD_FLUSH:
    return 0;
  default:
    req_set_error(r, NBD_EINVAL, "unsupported command %u", r->type);
    return r->error;
  }
  if (r->flags & ~allowed) {
    req_set_error(r, NBD_EINVAL, "%s: unsupported flags 0x%x", cmd_name(r->type),
                  r->flags & ~allowed);
    return r->error;
  }
  if (writes && (c->tflags & NBD_FLAG_READ_ONLY)) {
    req_set_error(r, NBD_EPERM, "%s: the export is read-only", cmd_name(r->type));
    return r->error;
  }
  if (r->count == 0) {
    req_set_error(r, NBD_EINVAL, "%s of 0 bytes", cmd_name(r->type));
    return r->error;
  }
  /* The size the client was told, or less when the array shrank since
   * (raidctl grow --size); the kernel's own client is told a new size at
   * once (nbd_attached_resize()), so it gets the array's size now. */
  size = raid_array_size(c->a);
  if (!c->kernel && c->size < size)
    size = c->size;
  if (r->offset > size || r->count > size - r->offset) {
    req_set_error(r, range_einval ? NBD_EINVAL : NBD_ENOSPC,
                  "%s of %u bytes at offset %llu is beyond the end of the export "
                  "(%llu bytes)", cmd_name(r->type), r->count,
                  (unsigned long long)r->offset, (unsigned long long)size);
    return r->error;
  }
  if ((r->type == NBD_CMD_READ || r->type == NBD_CMD_WRITE) &&
      r->count > NBD_MAX_PAYLOAD) {
    req_set_error(r, c->structured ? NBD_EOVERFLOW : NBD_EINVAL,
                  "%s of %u bytes is over the maximum block size %u",
                  cmd_name(r->type), r->count, NBD_MAX_PAYLOAD);
    return r->error;
  }
  if (r->offset % c->min_block || r->count % c->min_block) {
    req_set_error(r, NBD_EINVAL, "%s of %u bytes at offset %llu is not aligned "
                  "to the minimum block size %u", cmd_name(r->type), r->count,
                  (unsigned long long)r->offset, c->min_block);
    return r->error;
  }
  return 0;
}

static int
req_alloc_buf(struct nbd_req *r)
{
  if (posix_memalign(&r->buf, BUF_ALIGN, r->count) != 0) {
    r->buf = NULL;
    req_set_error(r, NBD_ENOMEM, "out of memory for %u bytes", r->count);
    return -1;
  }
  r->c->bytes += r->count;
  return 0;
}

/* Submit a validated request (a WRITE with its payload in). */
void
nbd_req_submit(struct nbd_req *r)
{
  struct nbd_conn *c = r->c;
  struct raid_queue *q = c->w->q;
  unsigned fua = (r->flags & NBD_CMD_FLAG_FUA) ? RAID_REQ_FUA : 0;
  int ret;

  switch (r->type) {
  case NBD_CMD_READ:
    if (req_alloc_buf(r) < 0) {
      nbd_req_reply(r);
      return;
    }
    ret = raid_aio_read(q, c->a, r->buf, r->count, r->offset, req_done, r);
    break;
  case NBD_CMD_WRITE:
    ret = raid_aio_write(q, c->a, r->buf, r->count, r->offset, fua, req_done, r);
    break;
  case NBD_CMD_FLUSH:
    ret = raid_aio_flush(q, c->a, req_done, r);
    break;
  case NBD_CMD_TRIM:
    r->flush_after = fua != 0;
    ret = raid_aio_discard(q, c->a, r->count, r->offset, req_done, r);
    break;
  case NBD_CMD_WRITE_ZEROES:
    /* The library's discard reads back as zeroes on every level (on RAID 5
     * whole stripes are discarded on every member, parity included), so
     * without NO_HOLE the range may become holes in the members: a write
     * of zeroes over a gigabyte then allocates nothing.  With NO_HOLE the
     * members allocate the range (zero range, or zeroes written). */
    if (r->flags & NBD_CMD_FLAG_NO_HOLE)
      ret = raid_aio_write_zeroes(q, c->a, r->count, r->offset, fua, req_done, r);
    else {
      r->flush_after = fua != 0;
      ret = raid_aio_discard(q, c->a, r->count, r->offset, req_done, r);
    }
    break;
  case NBD_CMD_CACHE:
    /* Nothing to prefetch into: members are read on demand. */
    nbd_req_reply(r);
    return;
  default:                      /* req_check() let through only the above */
    req_set_error(r, NBD_EINVAL, "unsupported command %u", r->type);
    nbd_req_reply(r);
    return;
  }
  if (ret < 0) {
    req_set_error(r, nbd_errno_to_wire(ret), "%s", raid_get_error());
    if (c->errors_logged++ < 10)
      log_warn("nbd: %s (export %s): %s refused: %s", c->peer,
               export_name(c->exp), cmd_name(r->type), r->msg);
    nbd_req_reply(r);
    return;
  }
  c->busy++;
  c->w->need_run = true;
}

/* Parse the request header at the front of c->in.  Returns -1 when the
 * connection must close. */
int
nbd_req_parse_header(struct nbd_conn *c)
{
  struct nbd_request h;
  struct nbd_req *r;

  memcpy(&h, c->in + c->in_start, sizeof h);
  c->in_start += sizeof h;
  if (be32toh(h.magic) != NBD_REQUEST_MAGIC) {
    log_warn("nbd: %s (export %s): bad request magic 0x%08x, closing the connection",
             c->peer, export_name(c->exp), be32toh(h.magic));
    return -1;
  }
  if ((r = calloc(1, sizeof *r)) == NULL) {
    log_err("nbd: %s (export %s): out of memory, closing", c->peer,
            export_name(c->exp));
    return -1;
  }
  r->c = c;
  r->cookie = h.cookie;
  r->offset = be64toh(h.offset);
  r->count = be32toh(h.count);
  r->type = be16toh(h.type);
  r->flags = be16toh(h.flags);
  c->nreqs++;

  if (r->type == NBD_CMD_DISC) {
    log_debug("nbd: %s (export %s): client sent disconnect", c->peer,
              export_name(c->exp));
    nbd_req_free(r);
    return -1;
  }
  if (r->type == NBD_CMD_WRITE) {
    if (r->count > NBD_MAX_PAYLOAD) {
      log_warn("nbd: %s (export %s): write of %u bytes (over the %u byte limit), "
               "closing the connection", c->peer, export_name(c->exp), r->count,
               NBD_MAX_PAYLOAD);
      nbd_req_free(r);
      return -1;
    }
    if (req_validate(c, r) != 0 || req_alloc_buf(r) < 0) {
      if (r->count == 0) {
        nbd_req_reply(r);
        return 0;
      }
      c->rs = RS_SKIP;
      c->skip_left = r->count;
    }
    else {
      c->rs = RS_PAYLOAD;
      c->got = 0;
    }
    c->cur = r;
    return 0;
  }
  if (req_validate(c, r) != 0)
    nbd_req_reply(r);
  else
    nbd_req_submit(r);
  return 0;
}
