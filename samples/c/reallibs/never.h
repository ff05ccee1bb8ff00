/* Forced into every unit of the real-library builds (gcc -include): a global each unit
 * can name in a breakpoint condition (`tandem_never == 1`) that nothing ever sets. Weak,
 * so the units share one definition. */
__attribute__((weak)) int tandem_never;
