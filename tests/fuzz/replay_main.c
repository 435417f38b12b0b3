/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz inputs without libFuzzer: each argument is a file or a directory of
 * files, and every file goes through LLVMFuzzerTestOneInput once, in a heap buffer of
 * exactly its size (so ASan and valgrind see any read past the end). An empty or
 * missing corpus is a failure: a regression suite that runs nothing proves nothing.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return -1;
    }
    long size = ftell(f);
    rewind(f);
    if (size < 0) {
        fclose(f);
        return -1;
    }
    /* malloc(0) may return NULL; keep one byte so an empty input is still a valid pointer. */
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1u);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: read failed\n", path);
        free(data);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    size_t done = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0) {
                return 1;
            }
            done++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            perror(argv[i]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') {
                continue;
            }
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
                continue;
            }
            if (replay_file(path) != 0) {
                closedir(d);
                return 1;
            }
            done++;
        }
        closedir(d);
    }
    printf("replayed %zu inputs\n", done);
    if (done == 0) {
        fprintf(stderr, "no inputs: the corpus is missing or empty\n");
        return 1;
    }
    return 0;
}
