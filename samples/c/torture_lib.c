/* Hot functions of the torture program (samples/c/torture.c): small, called millions of
 * times from four threads and from a SIGALRM handler; every line is a breakpoint site
 * the torture test edits while they run. */

extern int g_never;

int hot_add(int i, int t)
{
    int x = i * 3 + t;          /* T:add1 */
    if (x % 7 == 0)             /* T:add2 */
        x += g_never + 1;       /* T:add3 */
    x ^= (x >> 3);              /* T:add4 */
    return x;                   /* T:add5 */
}

unsigned hot_mix(unsigned h, int i)
{
    h ^= (unsigned)i;           /* T:mix1 */
    h *= 16777619u;             /* T:mix2 */
    h += (h >> 5);              /* T:mix3 */
    switch (i & 3) {            /* T:mix4 */
    case 0: h ^= 0x9e37u; break; /* T:mix5 */
    case 1: h += 0x7f4au; break; /* T:mix6 */
    default: h -= 1; break;     /* T:mix7 */
    }
    return h;                   /* T:mix8 */
}
