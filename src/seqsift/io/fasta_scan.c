/* The FASTA scan's loops, compiled: what fasta_scan.py otherwise does with NumPy, in one pass each.
 *
 *   scan_block       one block's lines as runs, its header text, names (hashed) and bases (_scan_block);
 *   lay_out_records  the .fai columns of a part of the records, from the file's runs (_records_of_runs);
 *   format_fai       the .fai text of a part of the records (FastaLayout.fai_bytes).
 *
 * io/native.py compiles this file on first use (cc -O2 -shared, into seqsift's cache directory) and
 * calls it through ctypes, which releases the GIL, so every scanning thread runs it at once. Where no
 * C compiler is found, fasta_scan.py's NumPy code does the same work; tests/test_io_scan.py runs the
 * reader both ways and tests/test_io_native.py compares the two field by field.
 *
 * A block starts at a line's start (or, continues_line, inside a line begun in the previous block).
 * Its lines become runs of identical consecutive lines (fasta_scan._Lines): each line's length (its
 * '\n' included), whether it ends in '\r' and whether in '\n', whether it is a header (starts with
 * '>'). Header lines, the block's first line and its last line are runs of their own.
 */
#include <stdint.h>
#include <string.h>

typedef struct {
    int64_t runs;                /* runs of identical lines written */
    int64_t headers;             /* header lines */
    int64_t header_bytes;        /* header_text's bytes: each header line after '>' without its ending, then '\n' */
    int64_t name_bytes;          /* name_text's bytes: each header's first word, then '\n' */
    int64_t sequence_bytes;      /* the block's bases: its other lines without their endings */
    int64_t before_first_header; /* bases before the first header line; -1: no header line */
    int32_t sequence_non_ascii;  /* a base byte is >= 0x80 */
    int32_t names_unknown;       /* a header is not ASCII or holds no word: names left to the caller */
    int32_t described;           /* a header line holds more than its name */
    int32_t name_too_long;       /* a name is longer than hashed_bytes (rounded up to 8): no hashes */
} block_counts;

static const uint64_t MIX = 0x9E3779B97F4A7C15ull;  /* text_list._MIX */

/* The bytes str.split() takes for whitespace in ASCII (fasta_scan._SPACE). */
static int is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1f);
}

/* TextList.hashes of one string: its length mixed with each of its 8-byte words, the last
 * zero-padded (words read in the machine's byte order, as NumPy's uint64 view reads them). */
static uint64_t name_hash(const uint8_t *name, int64_t width) {
    uint64_t hash = (uint64_t)width;
    for (int64_t at = 0; at < width; at += 8) {
        uint64_t word = 0;
        memcpy(&word, name + at, (size_t)(width - at < 8 ? width - at : 8));
        hash = (hash ^ word) * MIX;
        hash ^= hash >> 29;
    }
    return hash;
}

/* Newlines in data: one more than the block's lines can ever be (the capacity of the run arrays). */
int64_t count_newlines(const uint8_t *data, int64_t size) {
    int64_t count = 0;
    const uint8_t *at = data, *end = data + size;
    while (at < end && (at = memchr(at, '\n', (size_t)(end - at))) != NULL) {
        count++;
        at++;
    }
    return count;
}

/* A header line's text (after '>', without its ending) into the names: its first word, hashed. */
static void add_name(const uint8_t *line, int64_t width, int64_t hashed_bytes, uint8_t *name_text,
                     int64_t *name_ends, uint64_t *name_hashes, block_counts *counts) {
    int64_t first = 0;
    while (first < width && is_space(line[first])) first++;
    int64_t stop = first;
    while (stop < width && !is_space(line[stop])) stop++;
    for (int64_t i = 0; i < width; i++) {
        if (line[i] >= 0x80) counts->names_unknown = 1;
    }
    if (stop == first) counts->names_unknown = 1;  /* a header without a name */
    if (first != 0 || stop != width) counts->described = 1;
    if (((stop - first + 7) / 8) * 8 > hashed_bytes) counts->name_too_long = 1;
    memcpy(name_text + counts->name_bytes, line + first, (size_t)(stop - first));
    counts->name_bytes += stop - first;
    name_ends[counts->headers] = counts->name_bytes;
    name_text[counts->name_bytes++] = '\n';
    name_hashes[counts->headers] = name_hash(line + first, stop - first);
}

/* Scan data[0:size). The run arrays hold count_newlines(data, size) + 1 entries; header_text, name_text
 * and sequence hold size bytes; header_ends, name_ends and name_hashes one entry per line. Returns the
 * number of runs (also counts->runs). */
int64_t scan_block(const uint8_t *data, int64_t size, int continues_line, int64_t hashed_bytes,
                   int64_t *run_length, uint8_t *run_carriage, uint8_t *run_newline, uint8_t *run_header,
                   int64_t *run_count, uint8_t *header_text, int64_t *header_ends, uint8_t *name_text,
                   int64_t *name_ends, uint64_t *name_hashes, uint8_t *sequence, block_counts *counts) {
    memset(counts, 0, sizeof *counts);
    counts->before_first_header = -1;
    int64_t start = 0, line = 0, previous_length = -1;
    int previous_carriage = 0, previous_newline = 0, previous_header = 0;
    while (start < size) {
        const uint8_t *found = memchr(data + start, '\n', (size_t)(size - start));
        int64_t end = found ? found - data : size;          /* the line's '\n', or the block's end */
        int newline = found != NULL;
        int64_t length = end - start + newline;
        int carriage = end > start && data[end - 1] == '\r';
        int header = end > start && data[start] == '>' && !(continues_line && line == 0);
        int64_t content_end = end - carriage;
        if (header) {
            if (counts->before_first_header < 0) counts->before_first_header = counts->sequence_bytes;
            int64_t width = content_end - (start + 1);     /* (a header's '>' is never its '\r') */
            memcpy(header_text + counts->header_bytes, data + start + 1, (size_t)width);
            add_name(data + start + 1, width, hashed_bytes, name_text, name_ends, name_hashes, counts);
            counts->header_bytes += width;
            header_ends[counts->headers++] = counts->header_bytes;
            header_text[counts->header_bytes++] = '\n';
        } else if (content_end > start) {
            memcpy(sequence + counts->sequence_bytes, data + start, (size_t)(content_end - start));
            counts->sequence_bytes += content_end - start;
        }
        int last = end + 1 >= size;
        if (line <= 1 || last || header || previous_header || length != previous_length
                || carriage != previous_carriage || newline != previous_newline) {
            run_length[counts->runs] = length;
            run_carriage[counts->runs] = (uint8_t)carriage;
            run_newline[counts->runs] = (uint8_t)newline;
            run_header[counts->runs] = (uint8_t)header;
            run_count[counts->runs] = 1;
            counts->runs++;
        } else {
            run_count[counts->runs - 1]++;
        }
        previous_length = length;
        previous_carriage = carriage;
        previous_newline = newline;
        previous_header = header;
        line++;
        start = end + 1;
    }
    uint8_t any = 0;
    for (int64_t i = 0; i < counts->sequence_bytes; i++) any |= sequence[i];
    counts->sequence_non_ascii = (any & 0x80) != 0;
    return counts->runs;
}

/* The .fai columns of the records whose header lines are among runs [first_run, stop_run) of the
 * whole file's runs (fasta_scan._records_of_runs, whose comments give samtools' rule for a regular
 * record); lines_before and bytes_before count the file's lines and bytes before first_run. Writes
 * one entry per record into the five columns; first_bad gets (0-based line, record of the part) of
 * the first line that breaks its record's regularity, or stays (-1, -1). Returns the records. */
int64_t lay_out_records(const int64_t *length, const uint8_t *carriage, const uint8_t *newline,
                        const uint8_t *header, const int64_t *count, int64_t first_run, int64_t stop_run,
                        int64_t lines_before, int64_t bytes_before, int64_t *lengths, int64_t *offsets,
                        int64_t *line_bases, int64_t *line_bytes, int64_t *header_lines, int64_t *first_bad) {
    int64_t run = first_run, line = lines_before, byte = bytes_before, record = -1;
    first_bad[0] = first_bad[1] = -1;
    while (run < stop_run && !header[run]) {               /* lines before the first header: no record's */
        line += count[run];
        byte += length[run] * count[run];
        run++;
    }
    while (run < stop_run) {                              /* run is a header line */
        record++;
        offsets[record] = byte + length[run];
        header_lines[record] = line + 1;
        line += count[run];
        byte += length[run] * count[run];
        int64_t first = run + 1, end = first;
        while (end < stop_run && !header[end]) end++;
        int64_t width = first < end ? length[first] : 0;   /* the first line is the yardstick */
        int64_t per_line = first < end ? length[first] - newline[first] - carriage[first] : 0;
        int64_t last = -1;                                  /* the run of the last non-blank line */
        for (int64_t q = end - 1; q >= first && last < 0; q--) {
            if (length[q] - newline[q] - carriage[q] > 0) last = q;
        }
        int64_t total = 0;
        for (int64_t q = first; q < end; q++) {
            int64_t bases = length[q] - newline[q] - carriage[q];
            total += bases * count[q];
            if (first_bad[0] < 0 && last >= 0) {            /* (lines only grow: the first found is the first) */
                int at_last = q == last;
                int before_last = q < last || (at_last && count[q] > 1);
                int differs = length[q] != width || bases != per_line;
                if (before_last && differs) {
                    first_bad[0] = line;
                    first_bad[1] = record;
                } else if (at_last && bases > per_line) {
                    first_bad[0] = line + count[q] - 1;
                    first_bad[1] = record;
                }
            }
            line += count[q];
            byte += length[q] * count[q];
        }
        lengths[record] = total;
        line_bases[record] = per_line;
        line_bytes[record] = width;
        run = end;
    }
    return record + 1;
}

/* Writes value in decimal at out; returns the digits written. */
static int64_t put_decimal(uint8_t *out, int64_t value) {
    uint8_t digits[20];
    int64_t count = 0;
    do {
        digits[count++] = (uint8_t)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    for (int64_t i = 0; i < count; i++) out[i] = digits[count - 1 - i];
    return count;
}

/* The .fai lines of records [first, stop) (FastaLayout.fai_bytes): name, then its four non-negative
 * columns, tab-separated, each line ending in '\n'. A TextList holds the names: names_text, each name
 * followed by '\n' at name_ends[i]. out holds the names' bytes plus 81 per record. Returns the bytes. */
int64_t format_fai(const uint8_t *names_text, const int64_t *name_ends, int64_t first, int64_t stop,
                   const int64_t *lengths, const int64_t *offsets, const int64_t *line_bases,
                   const int64_t *line_bytes, uint8_t *out) {
    int64_t written = 0;
    for (int64_t i = first; i < stop; i++) {
        int64_t name_start = i == 0 ? 0 : name_ends[i - 1] + 1;
        memcpy(out + written, names_text + name_start, (size_t)(name_ends[i] - name_start));
        written += name_ends[i] - name_start;
        const int64_t values[4] = {lengths[i], offsets[i], line_bases[i], line_bytes[i]};
        for (int k = 0; k < 4; k++) {
            out[written++] = '\t';
            written += put_decimal(out + written, values[k]);
        }
        out[written++] = '\n';
    }
    return written;
}
