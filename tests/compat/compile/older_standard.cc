// Compiled as C++14 by CompatCompile.OlderStandardNamesCxx17 (tests/compat/CMakeLists.txt), which expects
// dynet.h's error naming the standard the headers need.
#include "dynet/expr.h"

int main() { return 0; }
