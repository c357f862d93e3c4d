/* The names in a directory, for the unit tests that check what a write left behind. */
#ifndef SHARDGATE_TEST_DIR_LISTING_H
#define SHARDGATE_TEST_DIR_LISTING_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names in `dir` but "." ones, sorted, joined by spaces (a static buffer). */
static const char *dir_listing(const char *dir)
{
    static char out[1024];
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.')
            snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", out[0] ? " " : "",
                     names[i]->d_name);
        free(names[i]);
    }
    free(names);
    return out;
}

#endif
