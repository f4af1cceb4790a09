/* Synthetic trace generation (waitscope.synth) — binding. */
#include "py_common.h"

int ws_py_register_synth(PyObject *module)
{
    (void)module;
    return 0;
}
