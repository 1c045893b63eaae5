/* Remote members that come back by themselves (reconnect.c). */
#ifndef RAIDD_RECONNECT_H
#define RAIDD_RECONNECT_H

/* Start and stop the thread that takes faulty remote members back when
 * their server answers again.  0 or -errno (said in the log). */
int reconnect_start(void);
void reconnect_stop(void);

#endif
