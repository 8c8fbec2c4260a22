// DyNet 2.0's Boost.Serialization macros (dynet/io-macros.h). DyNet 2.1 dropped Boost serialization
// for the text model format (dynet/io.h: TextFileSaver / TextFileLoader), and so do we: the macros
// expand to nothing, so classes that declare them still compile; save models through dynet/io.h.
#pragma once

#define MAX_SERIALIZE_VERSION 1024
#define DYNET_SERIALIZE_IMPL(MyClass)
#define DYNET_SAVELOAD_IMPL(MyClass)
#define DYNET_SERIALIZE_DECLARE()
#define DYNET_SERIALIZE_SPLIT_DECLARE()
#define DYNET_SERIALIZE_COMMIT_EMPTY(...)
#define DYNET_SERIALIZE_COMMIT(MyClass, ...)
#define DYNET_SERIALIZE_SAVE_COMMIT(MyClass, ...)
#define DYNET_SERIALIZE_LOAD_COMMIT(MyClass, FUNC, ...)
#define DYNET_VERSION_DEFINE(T, VERSION)
#define DYNET_SERIALIZE_DEFINE(...)
#define DYNET_SERIALIZE_DERIVED_DEFINE(T, ...)
#define DYNET_SERIALIZE_DERIVED_EQ_DEFINE(T)
#define DYNET_VERSION_SERIALIZE_DEFINE(l, r, ...)
#define DYNET_VERSION_SERIALIZE_DERIVED_DEFINE(T, l, r, ...)
#define DYNET_NINTRUSIVE_SERIALIZE_DEFINE(param, ...)
