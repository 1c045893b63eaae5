/* Description: the public header compiles on its own (nothing is included
 * before it), and a program using only it links against the shared
 * library: raid_get_error(), raid_get_errno() and raid_xor_ref() on small
 * buffers.  Exits 0 on success.
 */
#include <raid/raid.h>

int
main(void)
{
  unsigned char a[16], b[16], dst[16];
  void *srcs[2] = { a, b };
  const char *msg;
  unsigned i;

  msg = raid_get_error();
  if (msg == 0 || msg[0] == '\0')
    return 1;

  for (i = 0; i < sizeof a; i++) {
    a[i] = (unsigned char)i;
    b[i] = (unsigned char)(0xa5 ^ (i * 7));
  }
  if (raid_xor_ref(dst, srcs, 2, sizeof dst) != 0)
    return 1;
  for (i = 0; i < sizeof dst; i++)
    if (dst[i] != (unsigned char)(a[i] ^ b[i]))
      return 1;

  /* An error is a negative errno with a message. */
  if (raid_xor_ref(dst, srcs, 0, sizeof dst) >= 0 || raid_get_errno() == 0)
    return 1;
  msg = raid_get_error();
  if (msg == 0 || msg[0] == '\0')
    return 1;

  return 0;
}
