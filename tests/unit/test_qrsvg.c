/* Unit tests for src/core/qrsvg.c: the symbol's size for known versions,
 * the quiet zone, and that the one path covers exactly the dark modules
 * of libqrencode's matrix (read back from the path and compared module by
 * module), plus the escaping of the text. */
#include "unit.h"

#include "core/qrsvg.h"

#include <qrencode.h>
#include <stdlib.h>
#include <string.h>

/* The SVG of text, NUL-terminated; caller frees. */
static char *svg_of(const char *text, const char *attrs, int *modules)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_status(gi_qr_svg(f, text, attrs, modules), GI_OK);
    fclose(f);
    return buf;
}

/* Reads an unsigned decimal at *p and moves past it. */
static int num(const char **p)
{
    char *end;
    long v = strtol(*p, &end, 10);
    assert_true(end != *p);
    *p = end;
    return (int)v;
}

/* Paints the path's rectangles "Mx yhNv1h-Nz" on a size x size grid and
 * checks each is exactly that shape. */
static unsigned char *paint(const char *svg, int size)
{
    unsigned char *grid = calloc((size_t)size * (size_t)size, 1);
    const char *p = strstr(svg, " d=\"");

    assert_non_null(grid);
    assert_non_null(p);
    p += 4;
    while (*p == 'M') {
        int x, y, n, n2;
        p++;
        x = num(&p);
        assert_int_equal(*p++, ' ');
        y = num(&p);
        assert_int_equal(*p++, 'h');
        n = num(&p);
        assert_true(strncmp(p, "v1h-", 4) == 0);
        p += 4;
        n2 = num(&p);
        assert_int_equal(*p++, 'z');
        assert_int_equal(n, n2);
        assert_true(x >= 0 && y >= 0 && x + n <= size && y < size);
        for (int i = 0; i < n; i++) {
            /* No module is covered twice. */
            assert_int_equal(grid[(size_t)y * (size_t)size + (size_t)(x + i)], 0);
            grid[(size_t)y * (size_t)size + (size_t)(x + i)] = 1;
        }
    }
    assert_int_equal(*p, '"');
    return grid;
}

static void check_matrix(const char *text, int want_width)
{
    int modules = 0, size;
    char *svg = svg_of(text, NULL, &modules), want_box[64];
    QRcode *qr = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M);
    unsigned char *grid;

    assert_non_null(qr);
    assert_int_equal(modules, want_width);
    assert_int_equal(qr->width, want_width);
    size = modules + 2 * GI_QR_QUIET;
    snprintf(want_box, sizeof want_box, "viewBox=\"0 0 %d %d\"", size, size);
    assert_non_null(strstr(svg, want_box));
    assert_non_null(strstr(svg, "shape-rendering=\"crispEdges\""));
    /* One path only. */
    assert_non_null(strstr(svg, "<path"));
    assert_null(strstr(strstr(svg, "<path") + 1, "<path"));
    grid = paint(svg, size);
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int in = x >= GI_QR_QUIET && x < GI_QR_QUIET + modules && y >= GI_QR_QUIET &&
                     y < GI_QR_QUIET + modules;
            int dark = in ? qr->data[(size_t)(y - GI_QR_QUIET) * (size_t)modules +
                                     (size_t)(x - GI_QR_QUIET)] &
                                1
                          : 0;
            if (grid[(size_t)y * (size_t)size + (size_t)x] != dark)
                fail_msg("%s: module (%d,%d) painted %d, matrix %d", text, x, y,
                         grid[(size_t)y * (size_t)size + (size_t)x], dark);
        }
    free(grid);
    QRcode_free(qr);
    free(svg);
}

/* Version 1 (21 modules) holds 14 bytes at level M, version 6 (41
 * modules) 106: a short tag and a 100-byte scan URL land there. */
static void test_versions_and_path(void **state)
{
    char url[101];

    check_matrix("HELLO", 21);
    check_matrix("GI-000123", 21);
    memset(url, 'a', 100);
    url[100] = '\0';
    memcpy(url, "https://inv.example/scan/", 25);
    check_matrix(url, 41);
}

static void test_escaping(void **state)
{
    char *svg = svg_of("a<b>&\"c'", "x=\"3\"", NULL);

    assert_non_null(strstr(svg, "<title>a&lt;b&gt;&amp;&quot;c&#39;</title>"));
    assert_non_null(strstr(svg, " x=\"3\">"));
    free(svg);
}

static void test_refuses_empty(void **state)
{
    FILE *f = fopen("/dev/null", "w");
    assert_non_null(f);
    assert_status(gi_qr_svg(f, "", NULL, NULL), GI_INVALID);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions_and_path),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_refuses_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
