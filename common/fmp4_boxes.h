/* The box field values fmp4_write.c writes and fmp4_read.c / fmp4_rebase.c read back
 * (ISO/IEC 14496-12 8.8): tfhd and trun flags, sample flags, and the NTP epoch of prft. */
#ifndef KP_FMP4_BOXES_H
#define KP_FMP4_BOXES_H

#define FMP4_NTP_UNIX_OFFSET 2208988800ull

/* Sample flags (8.8.3.1): sync samples depend on nothing, others on earlier ones. */
#define FMP4_FLAGS_SYNC      0x02000000u
#define FMP4_FLAGS_NON_SYNC  0x01010000u
#define FMP4_SAMPLE_NON_SYNC 0x00010000u /* sample_is_non_sync_sample */

#define FMP4_TFHD_BASE_DATA_OFFSET 0x000001u
#define FMP4_TFHD_SAMPLE_DESC      0x000002u
#define FMP4_TFHD_DEFAULT_DURATION 0x000008u
#define FMP4_TFHD_DEFAULT_SIZE     0x000010u
#define FMP4_TFHD_DEFAULT_FLAGS    0x000020u
#define FMP4_TFHD_BASE_IS_MOOF     0x020000u

#define FMP4_TRUN_DATA_OFFSET 0x000001u
#define FMP4_TRUN_FIRST_FLAGS 0x000004u
#define FMP4_TRUN_DURATION    0x000100u
#define FMP4_TRUN_SIZE        0x000200u
#define FMP4_TRUN_FLAGS       0x000400u
#define FMP4_TRUN_CTS         0x000800u

#endif
