/*
 * The C side of the librist layout check (see src/rist/ffi.rs and src/rist/tests.rs):
 * compiled by build.rs against the installed <librist/librist.h>, it reports the size
 * and field offsets of the structs whose fields Rust reads or writes
 * (rist_data_block, the header of rist_stats, rist_logging_settings) and the numeric
 * values of the enums the Rust declarations use, as a table of (name, value) the Rust
 * test compares with std::mem::size_of / offset_of! and its constants.
 */
#include <stddef.h>
#include <librist/librist.h>

struct strom_rist_layout_entry {
    const char *name;
    long long value;
};

#define SIZE(t) { "sizeof " #t, (long long)sizeof(struct t) }
#define OFF(t, f) { #t "." #f, (long long)offsetof(struct t, f) }
#define CONST(c) { #c, (long long)(c) }

static const struct strom_rist_layout_entry ENTRIES[] = {
    SIZE(rist_data_block),
    SIZE(rist_logging_settings),
    OFF(rist_data_block, payload),
    OFF(rist_data_block, payload_len),
    OFF(rist_data_block, ts_ntp),
    OFF(rist_data_block, virt_src_port),
    OFF(rist_data_block, virt_dst_port),
    OFF(rist_data_block, peer),
    OFF(rist_data_block, flow_id),
    OFF(rist_data_block, seq),
    OFF(rist_data_block, flags),
    OFF(rist_data_block, ref),
    OFF(rist_stats, json_size),
    OFF(rist_stats, stats_json),
    OFF(rist_stats, version),
    OFF(rist_stats, stats_type),
    OFF(rist_logging_settings, log_level),
    OFF(rist_logging_settings, log_cb),
    OFF(rist_logging_settings, log_cb_arg),
    OFF(rist_logging_settings, log_socket),
    OFF(rist_logging_settings, log_stream),
    { "sizeof enum rist_profile", (long long)sizeof(enum rist_profile) },
    { "sizeof enum rist_log_level", (long long)sizeof(enum rist_log_level) },
    { "sizeof enum rist_stats_type", (long long)sizeof(enum rist_stats_type) },
    CONST(RIST_PROFILE_SIMPLE),
    CONST(RIST_PROFILE_MAIN),
    CONST(RIST_LOG_DISABLE),
    CONST(RIST_LOG_ERROR),
    CONST(RIST_LOG_WARN),
    CONST(RIST_LOG_NOTICE),
    CONST(RIST_LOG_INFO),
    CONST(RIST_LOG_DEBUG),
    CONST(RIST_STATS_SENDER_PEER),
    CONST(RIST_STATS_RECEIVER_FLOW),
};

/* The table and its length; the strings and the table are static. */
const struct strom_rist_layout_entry *strom_rist_layout(size_t *count)
{
    *count = sizeof(ENTRIES) / sizeof(ENTRIES[0]);
    return ENTRIES;
}
