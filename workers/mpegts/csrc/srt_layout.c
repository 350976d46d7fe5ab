/*
 * The C side of the libsrt layout check (see src/srt/ffi.rs and src/srt/tests.rs):
 * compiled by build.rs against the installed <srt/srt.h>, it reports the size and
 * every field offset of SRT_TRACEBSTATS and SRT_EPOLL_EVENT, and the numeric values
 * of the SRT_SOCKOPT / SRT_SOCKSTATUS / epoll / SRT_ERRNO constants the Rust
 * declarations use, as a table of (name, value) the Rust test compares with
 * std::mem::size_of / offset_of! and its constants.
 */
#include <stddef.h>
#include <srt/srt.h>

struct strom_srt_layout_entry {
    const char *name;
    long long value;
};

#define SIZE(t) { "sizeof " #t, (long long)sizeof(t) }
#define OFF(f) { "SRT_TRACEBSTATS." #f, (long long)offsetof(SRT_TRACEBSTATS, f) }
#define EV_OFF(f) { "SRT_EPOLL_EVENT." #f, (long long)offsetof(SRT_EPOLL_EVENT, f) }
#define CONST(c) { #c, (long long)(c) }

static const struct strom_srt_layout_entry ENTRIES[] = {
    SIZE(SRT_TRACEBSTATS),
    SIZE(SRT_EPOLL_EVENT),
    SIZE(SRTSOCKET),
    SIZE(SRT_SOCKSTATUS),
    SIZE(SRT_SOCKOPT),
    EV_OFF(fd),
    EV_OFF(events),

    OFF(msTimeStamp),
    OFF(pktSentTotal),
    OFF(pktRecvTotal),
    OFF(pktSndLossTotal),
    OFF(pktRcvLossTotal),
    OFF(pktRetransTotal),
    OFF(pktSentACKTotal),
    OFF(pktRecvACKTotal),
    OFF(pktSentNAKTotal),
    OFF(pktRecvNAKTotal),
    OFF(usSndDurationTotal),
    OFF(pktSndDropTotal),
    OFF(pktRcvDropTotal),
    OFF(pktRcvUndecryptTotal),
    OFF(byteSentTotal),
    OFF(byteRecvTotal),
    OFF(byteRcvLossTotal),
    OFF(byteRetransTotal),
    OFF(byteSndDropTotal),
    OFF(byteRcvDropTotal),
    OFF(byteRcvUndecryptTotal),
    OFF(pktSent),
    OFF(pktRecv),
    OFF(pktSndLoss),
    OFF(pktRcvLoss),
    OFF(pktRetrans),
    OFF(pktRcvRetrans),
    OFF(pktSentACK),
    OFF(pktRecvACK),
    OFF(pktSentNAK),
    OFF(pktRecvNAK),
    OFF(mbpsSendRate),
    OFF(mbpsRecvRate),
    OFF(usSndDuration),
    OFF(pktReorderDistance),
    OFF(pktRcvAvgBelatedTime),
    OFF(pktRcvBelated),
    OFF(pktSndDrop),
    OFF(pktRcvDrop),
    OFF(pktRcvUndecrypt),
    OFF(byteSent),
    OFF(byteRecv),
    OFF(byteRcvLoss),
    OFF(byteRetrans),
    OFF(byteSndDrop),
    OFF(byteRcvDrop),
    OFF(byteRcvUndecrypt),
    OFF(usPktSndPeriod),
    OFF(pktFlowWindow),
    OFF(pktCongestionWindow),
    OFF(pktFlightSize),
    OFF(msRTT),
    OFF(mbpsBandwidth),
    OFF(byteAvailSndBuf),
    OFF(byteAvailRcvBuf),
    OFF(mbpsMaxBW),
    OFF(byteMSS),
    OFF(pktSndBuf),
    OFF(byteSndBuf),
    OFF(msSndBuf),
    OFF(msSndTsbPdDelay),
    OFF(pktRcvBuf),
    OFF(byteRcvBuf),
    OFF(msRcvBuf),
    OFF(msRcvTsbPdDelay),
    OFF(pktSndFilterExtraTotal),
    OFF(pktRcvFilterExtraTotal),
    OFF(pktRcvFilterSupplyTotal),
    OFF(pktRcvFilterLossTotal),
    OFF(pktSndFilterExtra),
    OFF(pktRcvFilterExtra),
    OFF(pktRcvFilterSupply),
    OFF(pktRcvFilterLoss),
    OFF(pktReorderTolerance),
    OFF(pktSentUniqueTotal),
    OFF(pktRecvUniqueTotal),
    OFF(byteSentUniqueTotal),
    OFF(byteRecvUniqueTotal),
    OFF(pktSentUnique),
    OFF(pktRecvUnique),
    OFF(byteSentUnique),
    OFF(byteRecvUnique),

    CONST(SRT_INVALID_SOCK),
    CONST(SRT_ERROR),
    CONST(SRTO_SNDSYN),
    CONST(SRTO_RCVSYN),
    CONST(SRTO_RENDEZVOUS),
    CONST(SRTO_SNDTIMEO),
    CONST(SRTO_RCVTIMEO),
    CONST(SRTO_MAXBW),
    CONST(SRTO_LATENCY),
    CONST(SRTO_PASSPHRASE),
    CONST(SRTO_PBKEYLEN),
    CONST(SRTO_CONNTIMEO),
    CONST(SRTO_STREAMID),
    CONST(SRTO_TRANSTYPE),
    CONST(SRTT_LIVE),
    CONST(SRTS_INIT),
    CONST(SRTS_OPENED),
    CONST(SRTS_LISTENING),
    CONST(SRTS_CONNECTING),
    CONST(SRTS_CONNECTED),
    CONST(SRTS_BROKEN),
    CONST(SRTS_CLOSING),
    CONST(SRTS_CLOSED),
    CONST(SRTS_NONEXIST),
    CONST(SRT_EPOLL_IN),
    CONST(SRT_EPOLL_ERR),
    CONST(SRT_ECONNLOST),
    CONST(SRT_ENOCONN),
    CONST(SRT_EINVSOCK),
    CONST(SRT_EASYNCRCV),
    CONST(SRT_ETIMEOUT),
};

/* The table and its length; the strings and the table are static. */
const struct strom_srt_layout_entry *strom_srt_layout(size_t *count)
{
    *count = sizeof(ENTRIES) / sizeof(ENTRIES[0]);
    return ENTRIES;
}
