// DyNet's dynet/dynet-helper.h held a to_string work-around for Cygwin; nothing is needed here.
#pragma once

#include <string>
