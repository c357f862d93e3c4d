/* The index's engine writes index/ with its own calls, not through gw_io: the simulator keeps
 * or drops that directory whole at a crash (sim_disk.h). Its preallocation of each log file
 * (fallocate, tens of MB, which tmpfs fills page by page) is left out here: preallocating
 * changes no byte a read returns, and without it a start in the simulator costs a third less.
 * The executable's definition is the one the engine's library binds to. */
#include <fcntl.h>

int fallocate(int fd, int mode, off_t offset, off_t len)
{
    (void)fd, (void)mode, (void)offset, (void)len;
    return 0;
}
