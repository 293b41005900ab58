/* QR codes as SVG (see qrsvg.h). Each row's runs of dark modules become
 * one rectangle "M x y h n v 1 h -n z" of the single path, so the path
 * covers exactly the dark modules and a renderer with crispEdges draws
 * them without seams. */
#include "core/qrsvg.h"
#include "core/status.h"

#include <errno.h>
#include <qrencode.h>
#include <string.h>

void gi_xml_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if (ch >= 0x20 || ch == '\t' || ch == '\n')
                fputc(ch, f);
        }
    }
}

int gi_qr_svg(FILE *f, const char *text, const char *attrs, int *modules)
{
    QRcode *qr;
    int w, size;

    if (!text || !*text)
        return GI_INVALID;
    errno = 0;
    qr = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M);
    if (!qr)
        return errno == ENOMEM ? GI_INTERNAL : GI_INVALID;
    w = qr->width;
    size = w + 2 * GI_QR_QUIET;
    if (modules)
        *modules = w;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
            "shape-rendering=\"crispEdges\"%s%s><title>",
            size, size, attrs ? " " : "", attrs ? attrs : "");
    gi_xml_escape(f, text);
    fprintf(f, "</title><rect width=\"%d\" height=\"%d\" fill=\"#fff\"/><path fill=\"#000\" d=\"",
            size, size);
    for (int y = 0; y < w; y++) {
        const unsigned char *row = qr->data + (size_t)y * (size_t)w;
        for (int x = 0; x < w;) {
            int run = 0;
            /* Bit 0 of a module's byte is its colour: 1 dark. */
            while (x + run < w && (row[x + run] & 1))
                run++;
            if (run) {
                fprintf(f, "M%d %dh%dv1h-%dz", x + GI_QR_QUIET, y + GI_QR_QUIET, run, run);
                x += run;
            } else {
                x++;
            }
        }
    }
    fputs("\"/></svg>", f);
    QRcode_free(qr);
    return GI_OK;
}
