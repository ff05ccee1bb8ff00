/* lsp_tokens.h: prototypes for lsp_tokens.c (tandem's language-server tests). */
#ifndef LSP_TOKENS_H
#define LSP_TOKENS_H

struct box;

extern int total;

int box_area(struct box *b);

#endif
