/* The library samples/c/rev_plugins.c loads twice, built with a different PLUGIN_K
 * each time: the same layout, other files. */
int plugin_run(int v)
{
    return v * PLUGIN_K + 1;
}
