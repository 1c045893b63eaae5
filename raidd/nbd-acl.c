/* The access list for NBD's TCP clients: raidd --allow=ADDR[/PREFIXLEN][,...].
 *
 * Each entry is an IPv4 or IPv6 network; without /PREFIXLEN it is one
 * address (/32 or /128).  The option may be repeated: the lists add up.
 * nbd-server.c asks nbd_acl_allows() about every accepted TCP client
 * before it reads or writes a byte, and closes one outside the list
 * (logged with its address).  An IPv4 client seen through an IPv6 socket
 * (::ffff:a.b.c.d) is matched as the IPv4 address it is.  Without --allow
 * every client that reaches the port is let in.
 *
 * The list is built while the options are parsed, before any thread
 * starts, and only read after that.
 */
#include <config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "nbd-internal.h"

struct nbd_acl_entry {
  int family;                      /* AF_INET, AF_INET6 */
  unsigned char addr[16];          /* network byte order, host bits cleared */
  unsigned prefix;                 /* bits that must match */
};

struct nbd_acl {
  struct nbd_acl_entry *v;
  size_t n;
};

/* Do the first PREFIX bits of A and B agree? */
static bool
prefix_match(const unsigned char *a, const unsigned char *b, unsigned prefix)
{
  unsigned bytes = prefix / 8, bits = prefix % 8;

  if (memcmp(a, b, bytes) != 0)
    return false;
  if (bits == 0)
    return true;
  return ((a[bytes] ^ b[bytes]) & (0xff00u >> bits)) == 0;
}

static void
clear_host_bits(unsigned char *addr, unsigned len, unsigned prefix)
{
  for (unsigned i = 0; i < len; i++) {
    if (prefix >= 8 * (i + 1))
      continue;
    if (prefix <= 8 * i)
      addr[i] = 0;
    else
      addr[i] &= 0xff00u >> (prefix - 8 * i);
  }
}

/* One ADDR[/PREFIXLEN] from SPEC (the whole option, for messages). */
static int
parse_one(const char *item, const char *spec, struct nbd_acl_entry *e)
{
  char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
  unsigned max;
  long n;

  if (*item == '\0') {
    log_err("--allow %s: an empty entry (expected ADDR[/PREFIXLEN][,...])", spec);
    return -1;
  }
  if (strlen(item) >= sizeof buf) {
    log_err("--allow %s: \"%s\" is not an IPv4 or IPv6 address", spec, item);
    return -1;
  }
  strcpy(buf, item);
  if ((slash = strchr(buf, '/')) != NULL)
    *slash++ = '\0';
  /* [::1] as in --nbd-listen */
  if (buf[0] == '[' && buf[strlen(buf) - 1] == ']') {
    buf[strlen(buf) - 1] = '\0';
    memmove(buf, buf + 1, strlen(buf));
  }
  memset(e, 0, sizeof *e);
  if (inet_pton(AF_INET, buf, e->addr) == 1) {
    e->family = AF_INET;
    max = 32;
  }
  else if (inet_pton(AF_INET6, buf, e->addr) == 1) {
    e->family = AF_INET6;
    max = 128;
  }
  else {
    log_err("--allow %s: \"%s\" is not an IPv4 or IPv6 address (host names are "
            "not taken)", spec, buf);
    return -1;
  }
  e->prefix = max;
  if (slash) {
    errno = 0;
    n = strtol(slash, &end, 10);
    if (*slash == '\0' || *end || errno || n < 0 || n > (long)max) {
      log_err("--allow %s: prefix length \"%s\" for %s must be 0 to %u", spec, slash,
              buf, max);
      return -1;
    }
    e->prefix = n;
  }
  clear_host_bits(e->addr, max / 8, e->prefix);
  return 0;
}

int
nbd_acl_add(struct nbd_acl **aclp, const char *spec)
{
  struct nbd_acl *acl = *aclp;
  char *copy, *item, *save = NULL;
  int r = 0;

  if (acl == NULL && (acl = calloc(1, sizeof *acl)) == NULL)
    goto oom;
  *aclp = acl;
  if ((copy = strdup(spec)) == NULL)
    goto oom;
  if (*spec == '\0' || spec[strlen(spec) - 1] == ',' || *spec == ',' ||
      strstr(spec, ",,")) {
    log_err("--allow %s: an empty entry (expected ADDR[/PREFIXLEN][,...])", spec);
    free(copy);
    return -1;
  }
  for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    struct nbd_acl_entry e, *v;

    if (parse_one(item, spec, &e) < 0) {
      r = -1;
      break;
    }
    if ((v = realloc(acl->v, (acl->n + 1) * sizeof *v)) == NULL) {
      free(copy);
      goto oom;
    }
    acl->v = v;
    acl->v[acl->n++] = e;
  }
  free(copy);
  return r;

oom:
  log_err("--allow %s: out of memory", spec);
  return -1;
}

void
nbd_acl_free(struct nbd_acl *acl)
{
  if (acl) {
    free(acl->v);
    free(acl);
  }
}

bool
nbd_acl_allows(const struct nbd_acl *acl, const struct sockaddr *sa)
{
  static const unsigned char v4mapped[12] = { [10] = 0xff, [11] = 0xff };
  const unsigned char *addr;
  int family = sa->sa_family;

  if (acl == NULL)
    return true;
  if (family == AF_INET)
    addr = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
  else if (family == AF_INET6) {
    addr = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    if (memcmp(addr, v4mapped, sizeof v4mapped) == 0) {
      family = AF_INET;
      addr += 12;
    }
  }
  else
    return false;
  for (size_t i = 0; i < acl->n; i++)
    if (acl->v[i].family == family && prefix_match(addr, acl->v[i].addr, acl->v[i].prefix))
      return true;
  return false;
}
