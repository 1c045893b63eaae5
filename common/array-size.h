/* The number of elements of an array (not of a pointer: pass the array). */
#ifndef RAID_COMMON_ARRAY_SIZE_H
#define RAID_COMMON_ARRAY_SIZE_H

#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

#endif
