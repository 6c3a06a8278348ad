// The whole JSON library at once: the value, Python-compatible writing and
// parsing, and the UTF-8 helpers they share.
#pragma once

#include "base/json_parser.h"
#include "base/json_value.h"
#include "base/json_writer.h"
#include "base/utf8.h"
