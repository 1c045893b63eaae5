/* Failing members whose block device is removed (udev-watch.c). */
#ifndef RAIDD_UDEV_WATCH_H
#define RAIDD_UDEV_WATCH_H

/* Start watching (a thread); 0 or -errno, logged.  Harmless to fail. */
int udev_watch_start(void);
void udev_watch_stop(void);

#endif
