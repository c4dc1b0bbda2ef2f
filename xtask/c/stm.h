/*
 * STAMP's STM interface (the STM_* macros its lib/tm.h expands TM_* into)
 * bound to TinySTM 1.0.x. Written for skelaff's side-by-side harness
 * (`cargo xtask stamp-vs-c`): STAMP builds its STM programs with
 * `-DSTM -I<dir of this file>` and links TinySTM's libstm.a.
 *
 * - A thread's handle is TinySTM's `struct stm_tx *` (TinySTM also keeps
 *   it thread-locally; the handle only satisfies STAMP's TM_ARG plumbing).
 * - Transactions start with stm_start() and a sigsetjmp() in the caller's
 *   frame (TinySTM long-jumps there on abort), and end with stm_commit().
 * - Shared reads and writes dispatch on the size of the variable to
 *   TinySTM's sized wrappers, so `long`, `int`, `bool_t`, pointers,
 *   `float` and `double` fields all go through the STM at their own width.
 * - Transactional allocation goes through TinySTM's mod_mem: a free is
 *   deferred to commit, and the freed object's first word is written
 *   transactionally so that concurrent readers of it conflict.
 */
#ifndef SKELAFF_STAMP_TINYSTM_H
#define SKELAFF_STAMP_TINYSTM_H 1

#include <setjmp.h>
#include <stdint.h>
#include <string.h>
/* TinySTM's headers, through a link `tinystm` beside this file to its
 * include/ directory (this file takes the name <stm.h> STAMP includes). */
#include "tinystm/stm.h"
#include "tinystm/mod_mem.h"
#include "tinystm/wrappers.h"

#define STM_THREAD_T                 void
#define STM_SELF                     stamp_tinystm_self

#define STM_STARTUP()                do { stm_init(); mod_mem_init(0); } while (0)
#define STM_SHUTDOWN()               stm_exit()
#define STM_NEW_THREAD()             ((void *)stm_init_thread())
#define STM_INIT_THREAD(self, id)    ((void)(self), (void)(id))
#define STM_FREE_THREAD(self)        ((void)(self), stm_exit_thread())

#define STM_MALLOC(size)             stm_malloc(size)
#define STM_FREE(ptr)                stm_free((ptr), sizeof(stm_word_t))

static inline stm_tx_attr_t stamp_tinystm_attr(int read_only)
{
    stm_tx_attr_t a;
    a.attrs = 0;
    a.read_only = read_only ? 1 : 0;
    return a;
}

#define STM_BEGIN(ro)                { sigjmp_buf *stamp_tinystm_env = stm_start(stamp_tinystm_attr(ro)); \
                                       if (stamp_tinystm_env != NULL) sigsetjmp(*stamp_tinystm_env, 0);
#define STM_BEGIN_WR()               STM_BEGIN(0)
#define STM_BEGIN_RD()               STM_BEGIN(1)
#define STM_END()                    stm_commit(); }
#define STM_RESTART()                stm_abort(0)

/* A load of `var` at its own width, as a value of its own type. */
#define STM_READ_SIZED(var)                                                              \
    ({ __typeof__(var) stamp_tinystm_v;                                                  \
       volatile void *stamp_tinystm_a = (volatile void *)&(var);                         \
       switch (sizeof(var)) {                                                            \
       case 8: { uint64_t w = stm_load_u64((volatile uint64_t *)stamp_tinystm_a);        \
                 memcpy(&stamp_tinystm_v, &w, sizeof(stamp_tinystm_v)); break; }         \
       case 4: { uint32_t w = stm_load_u32((volatile uint32_t *)stamp_tinystm_a);        \
                 memcpy(&stamp_tinystm_v, &w, sizeof(stamp_tinystm_v)); break; }         \
       case 2: { uint16_t w = stm_load_u16((volatile uint16_t *)stamp_tinystm_a);        \
                 memcpy(&stamp_tinystm_v, &w, sizeof(stamp_tinystm_v)); break; }         \
       default: { uint8_t w = stm_load_u8((volatile uint8_t *)stamp_tinystm_a);          \
                 memcpy(&stamp_tinystm_v, &w, sizeof(stamp_tinystm_v)); break; }         \
       }                                                                                 \
       stamp_tinystm_v; })

/* A store of `val` (converted to the type of `var`) at the width of `var`. */
#define STM_WRITE_SIZED(var, val)                                                        \
    ({ __typeof__(var) stamp_tinystm_v = (__typeof__(var))(val);                         \
       volatile void *stamp_tinystm_a = (volatile void *)&(var);                         \
       switch (sizeof(var)) {                                                            \
       case 8: { uint64_t w = 0; memcpy(&w, &stamp_tinystm_v, sizeof(stamp_tinystm_v));  \
                 stm_store_u64((volatile uint64_t *)stamp_tinystm_a, w); break; }        \
       case 4: { uint32_t w = 0; memcpy(&w, &stamp_tinystm_v, sizeof(stamp_tinystm_v));  \
                 stm_store_u32((volatile uint32_t *)stamp_tinystm_a, w); break; }        \
       case 2: { uint16_t w = 0; memcpy(&w, &stamp_tinystm_v, sizeof(stamp_tinystm_v));  \
                 stm_store_u16((volatile uint16_t *)stamp_tinystm_a, w); break; }        \
       default: { uint8_t w = 0; memcpy(&w, &stamp_tinystm_v, sizeof(stamp_tinystm_v)); \
                 stm_store_u8((volatile uint8_t *)stamp_tinystm_a, w); break; }          \
       }                                                                                 \
       stamp_tinystm_v; })

#define STM_READ(var)                STM_READ_SIZED(var)
#define STM_READ_P(var)              STM_READ_SIZED(var)
#define STM_READ_F(var)              STM_READ_SIZED(var)
#define STM_WRITE(var, val)          STM_WRITE_SIZED(var, val)
#define STM_WRITE_P(var, val)        STM_WRITE_SIZED(var, val)
#define STM_WRITE_F(var, val)        STM_WRITE_SIZED(var, val)

/* Thread-private data is written directly, without an undo entry (TL2
 * logs these for undo). STAMP's uses in the programs run here (list
 * iterators, genome's thread-private construction entries, labyrinth's
 * success flag set as a transaction's last step) are rewritten by the
 * re-run of an aborted transaction before they are read again. */
#define STM_LOCAL_WRITE(var, val)    ({ (var) = (val); (var); })
#define STM_LOCAL_WRITE_P(var, val)  ({ (var) = (val); (var); })
#define STM_LOCAL_WRITE_F(var, val)  ({ (var) = (val); (var); })

#endif /* SKELAFF_STAMP_TINYSTM_H */
