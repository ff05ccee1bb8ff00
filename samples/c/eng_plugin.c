/* A library the engine's dlopen test loads after start. */
int plugin_scale = 3;

int plugin_add(int a, int b)
{
    int sum = a + b;
    return sum * plugin_scale;
}
