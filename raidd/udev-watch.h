/* Block devices that come and go (udev-watch.c): members whose device is
 * removed are failed; members of running arrays whose device comes back
 * are re-added (incremental.c), unless RE_ADD is false. */
#ifndef RAIDD_UDEV_WATCH_H
#define RAIDD_UDEV_WATCH_H

/* Start watching (a thread); 0 or -errno, logged.  Harmless to fail. */
#include <stdbool.h>

int udev_watch_start(bool re_add);
void udev_watch_stop(void);

#endif
