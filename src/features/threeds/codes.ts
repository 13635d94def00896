import { AUTHENTICATION_TYPES, CHALLENGE_PREFERENCE_CODES, type ChallengePreference } from '../../threeds/vocabulary.ts';

/**
 * Code tables the 3DS request validation needs: ISO 4217 currencies (EMV carries the numeric
 * code, callers often know the alphabetic one), ISO 3166-1 numeric countries, and the EMV codes
 * behind the API's kebab-case words, for whoever builds the AReq from a validated request.
 */

export type Currency = { alpha: string; numeric: string; minorUnits: number | undefined };

/**
 * ISO 4217, list one (current codes, 2024 amendments included), as ALPHA:NUMERIC:MINOR UNITS; `-`
 * is ISO's "N.A." (precious metals, SDR, test codes), whose amounts may use any exponent.
 * Withdrawn codes (HRK, VEF, MRO, STD, …) are left out: no issuer authenticates in them.
 */
const CURRENCY_TABLE = `
AED:784:2 AFN:971:2 ALL:008:2 AMD:051:2 ANG:532:2 AOA:973:2 ARS:032:2 AUD:036:2 AWG:533:2 AZN:944:2
BAM:977:2 BBD:052:2 BDT:050:2 BGN:975:2 BHD:048:3 BIF:108:0 BMD:060:2 BND:096:2 BOB:068:2 BOV:984:2
BRL:986:2 BSD:044:2 BTN:064:2 BWP:072:2 BYN:933:2 BZD:084:2 CAD:124:2 CDF:976:2 CHE:947:2 CHF:756:2
CHW:948:2 CLF:990:4 CLP:152:0 CNY:156:2 COP:170:2 COU:970:2 CRC:188:2 CUC:931:2 CUP:192:2 CVE:132:2
CZK:203:2 DJF:262:0 DKK:208:2 DOP:214:2 DZD:012:2 EGP:818:2 ERN:232:2 ETB:230:2 EUR:978:2 FJD:242:2
FKP:238:2 GBP:826:2 GEL:981:2 GHS:936:2 GIP:292:2 GMD:270:2 GNF:324:0 GTQ:320:2 GYD:328:2 HKD:344:2
HNL:340:2 HTG:332:2 HUF:348:2 IDR:360:2 ILS:376:2 INR:356:2 IQD:368:3 IRR:364:2 ISK:352:0 JMD:388:2
JOD:400:3 JPY:392:0 KES:404:2 KGS:417:2 KHR:116:2 KMF:174:0 KPW:408:2 KRW:410:0 KWD:414:3 KYD:136:2
KZT:398:2 LAK:418:2 LBP:422:2 LKR:144:2 LRD:430:2 LSL:426:2 LYD:434:3 MAD:504:2 MDL:498:2 MGA:969:2
MKD:807:2 MMK:104:2 MNT:496:2 MOP:446:2 MRU:929:2 MUR:480:2 MVR:462:2 MWK:454:2 MXN:484:2 MXV:979:2
MYR:458:2 MZN:943:2 NAD:516:2 NGN:566:2 NIO:558:2 NOK:578:2 NPR:524:2 NZD:554:2 OMR:512:3 PAB:590:2
PEN:604:2 PGK:598:2 PHP:608:2 PKR:586:2 PLN:985:2 PYG:600:0 QAR:634:2 RON:946:2 RSD:941:2 RUB:643:2
RWF:646:0 SAR:682:2 SBD:090:2 SCR:690:2 SDG:938:2 SEK:752:2 SGD:702:2 SHP:654:2 SLE:925:2 SLL:694:2
SOS:706:2 SRD:968:2 SSP:728:2 STN:930:2 SVC:222:2 SYP:760:2 SZL:748:2 THB:764:2 TJS:972:2 TMT:934:2
TND:788:3 TOP:776:2 TRY:949:2 TTD:780:2 TWD:901:2 TZS:834:2 UAH:980:2 UGX:800:0 USD:840:2 USN:997:2
UYI:940:0 UYU:858:2 UYW:927:4 UZS:860:2 VED:926:2 VES:928:2 VND:704:0 VUV:548:0 WST:882:2 XAF:950:0
XAG:961:- XAU:959:- XBA:955:- XBB:956:- XBC:957:- XBD:958:- XCD:951:2 XCG:532:2 XDR:960:- XOF:952:0
XPD:964:- XPF:953:0 XPT:962:- XSU:994:- XTS:963:- XUA:965:- XXX:999:- YER:886:2 ZAR:710:2 ZMW:967:2
ZWG:924:2 ZWL:932:2`;

const CURRENCIES: readonly Currency[] = CURRENCY_TABLE.trim().split(/\s+/).map((entry) => {
  const [alpha, numeric, minor] = entry.split(':');
  return { alpha, numeric, minorUnits: minor === '-' ? undefined : Number(minor) };
});
const BY_ALPHA = new Map(CURRENCIES.map((c) => [c.alpha, c]));
// ANG and XCG share 532 (the Caribbean guilder replaces the Antillean one under the same number): either names it.
const BY_NUMERIC = new Map(CURRENCIES.map((c) => [c.numeric, c]));

/**
 * The currency a code names: 3 digits as EMV carries it (`840`) or 3 letters (`USD`, any case).
 * Undefined for anything else, so callers tell "unknown" from "malformed" by the shape alone.
 */
export function currencyOf(code: string): Currency | undefined {
  if (/^[0-9]{3}$/.test(code)) return BY_NUMERIC.get(code);
  if (/^[A-Za-z]{3}$/.test(code)) return BY_ALPHA.get(code.toUpperCase());
  return undefined;
}

export const CURRENCY_ALPHA_CODES: readonly string[] = CURRENCIES.map((c) => c.alpha);

/**
 * ISO 3166-1 numeric codes with their alpha-3 code (all 249 officially assigned), NUMERIC:ALPHA3.
 * The alpha-3 code only lets an error say which number a caller meant (`USA` → 840).
 */
const COUNTRY_TABLE = `
004:AFG 008:ALB 010:ATA 012:DZA 016:ASM 020:AND 024:AGO 028:ATG 031:AZE 032:ARG 036:AUS 040:AUT 044:BHS
048:BHR 050:BGD 051:ARM 052:BRB 056:BEL 060:BMU 064:BTN 068:BOL 070:BIH 072:BWA 074:BVT 076:BRA 084:BLZ
086:IOT 090:SLB 092:VGB 096:BRN 100:BGR 104:MMR 108:BDI 112:BLR 116:KHM 120:CMR 124:CAN 132:CPV 136:CYM
140:CAF 144:LKA 148:TCD 152:CHL 156:CHN 158:TWN 162:CXR 166:CCK 170:COL 174:COM 175:MYT 178:COG 180:COD
184:COK 188:CRI 191:HRV 192:CUB 196:CYP 203:CZE 204:BEN 208:DNK 212:DMA 214:DOM 218:ECU 222:SLV 226:GNQ
231:ETH 232:ERI 233:EST 234:FRO 238:FLK 239:SGS 242:FJI 246:FIN 248:ALA 250:FRA 254:GUF 258:PYF 260:ATF
262:DJI 266:GAB 268:GEO 270:GMB 275:PSE 276:DEU 288:GHA 292:GIB 296:KIR 300:GRC 304:GRL 308:GRD 312:GLP
316:GUM 320:GTM 324:GIN 328:GUY 332:HTI 334:HMD 336:VAT 340:HND 344:HKG 348:HUN 352:ISL 356:IND 360:IDN
364:IRN 368:IRQ 372:IRL 376:ISR 380:ITA 384:CIV 388:JAM 392:JPN 398:KAZ 400:JOR 404:KEN 408:PRK 410:KOR
414:KWT 417:KGZ 418:LAO 422:LBN 426:LSO 428:LVA 430:LBR 434:LBY 438:LIE 440:LTU 442:LUX 446:MAC 450:MDG
454:MWI 458:MYS 462:MDV 466:MLI 470:MLT 474:MTQ 478:MRT 480:MUS 484:MEX 492:MCO 496:MNG 498:MDA 499:MNE
500:MSR 504:MAR 508:MOZ 512:OMN 516:NAM 520:NRU 524:NPL 528:NLD 531:CUW 533:ABW 534:SXM 535:BES 540:NCL
548:VUT 554:NZL 558:NIC 562:NER 566:NGA 570:NIU 574:NFK 578:NOR 580:MNP 581:UMI 583:FSM 584:MHL 585:PLW
586:PAK 591:PAN 598:PNG 600:PRY 604:PER 608:PHL 612:PCN 616:POL 620:PRT 624:GNB 626:TLS 630:PRI 634:QAT
638:REU 642:ROU 643:RUS 646:RWA 652:BLM 654:SHN 659:KNA 660:AIA 662:LCA 663:MAF 666:SPM 670:VCT 674:SMR
678:STP 682:SAU 686:SEN 688:SRB 690:SYC 694:SLE 702:SGP 703:SVK 704:VNM 705:SVN 706:SOM 710:ZAF 716:ZWE
724:ESP 728:SSD 729:SDN 732:ESH 740:SUR 744:SJM 748:SWZ 752:SWE 756:CHE 760:SYR 762:TJK 764:THA 768:TGO
772:TKL 776:TON 780:TTO 784:ARE 788:TUN 792:TUR 795:TKM 796:TCA 798:TUV 800:UGA 804:UKR 807:MKD 818:EGY
826:GBR 831:GGY 832:JEY 833:IMN 834:TZA 840:USA 850:VIR 854:BFA 858:URY 860:UZB 862:VEN 876:WLF 882:WSM
887:YEM 894:ZMB`;

const COUNTRIES = new Map(COUNTRY_TABLE.trim().split(/\s+/).map((entry) => entry.split(':') as [string, string]));
const COUNTRY_BY_ALPHA3 = new Map([...COUNTRIES].map(([numeric, alpha]) => [alpha, numeric]));

export function isCountryNumeric(code: string): boolean {
  return COUNTRIES.has(code);
}

/** The numeric code of an alpha-3 country code (`USA` → `840`), for error messages only. */
export function countryNumericOfAlpha3(code: string): string | undefined {
  return COUNTRY_BY_ALPHA3.get(code.toUpperCase());
}

export const COUNTRY_NUMERIC_CODES: readonly string[] = [...COUNTRIES.keys()];

// ─── The API's words and the EMV codes behind them ──────────────────────────────────────────

export const SESSION_TYPES = ['customer', 'merchant'] as const;
export type SessionType = (typeof SESSION_TYPES)[number];

/** EMV messageCategory. */
export const AUTHENTICATION_CATEGORY_CODES = { 'payment': '01', 'non-payment': '02' } as const;
export type AuthenticationCategory = keyof typeof AUTHENTICATION_CATEGORY_CODES;

// The simulator's tables (src/threeds/vocabulary.ts) are the one source of these words.
export const AUTHENTICATION_TYPE_SESSIONS = AUTHENTICATION_TYPES;
export { CHALLENGE_PREFERENCE_CODES };
export type { ChallengePreference };
export type AuthenticationType = keyof typeof AUTHENTICATION_TYPES;

/**
 * A customer session's type as EMV threeDSRequestorAuthenticationInd. EMV 2.2 has no indicator
 * for a cardholder-present account verification: it goes as a non-payment authentication without one.
 */
export const CUSTOMER_AUTHENTICATION_TYPE_CODES: Partial<Record<AuthenticationType, string>> = {
  'payment-transaction': '01', 'recurring-transaction': '02', 'installment-transaction': '03',
  'add-card': '04', 'maintain-card': '05', 'cardholder-emv-verification': '06',
};

/** A merchant session's type as EMV threeRIInd (01–11 from 2.2.0; billing agreement 12 from 2.3). */
export const MERCHANT_AUTHENTICATION_TYPE_CODES: Partial<Record<AuthenticationType, string>> = {
  'recurring-transaction': '01', 'installment-transaction': '02', 'add-card': '03', 'maintain-card': '04',
  'account-verification': '05', 'split-or-delayed-shipment': '06', 'top-up': '07', 'mail-order': '08',
  'telephone-order': '09', 'whitelist-status-check': '10', 'other-payment': '11', 'billing-agreement': '12',
};


/** EMV transType. */
export const TRANSACTION_TYPE_CODES = {
  'purchase': '01', 'check-acceptance': '03', 'account-funding': '10', 'quasi-cash': '11', 'prepaid-activation-load': '28',
} as const;

/** EMV acctType (its 01, "not applicable", is what leaving the field out means). */
export const ACCOUNT_TYPE_CODES = { 'credit': '02', 'debit': '03' } as const;

/** EMV chAccAgeInd and paymentAccInd share these words and codes. */
export const ACCOUNT_AGE_CODES = {
  'no-account': '01', 'created-this-transaction': '02', 'less-than-30-days': '03', '30-to-60-days': '04', 'more-than-60-days': '05',
} as const;

/** EMV chAccChangeInd. */
export const ACCOUNT_CHANGE_CODES = {
  'changed-this-transaction': '01', 'less-than-30-days': '02', '30-to-60-days': '03', 'more-than-60-days': '04',
} as const;

/** EMV chAccPwChangeInd. */
export const PASSWORD_CHANGE_CODES = {
  'no-change': '01', 'changed-this-transaction': '02', 'less-than-30-days': '03', '30-to-60-days': '04', 'more-than-60-days': '05',
} as const;

/** EMV shipAddressUsageInd. */
export const SHIPPING_ADDRESS_USAGE_CODES = {
  'this-transaction': '01', 'less-than-30-days': '02', '30-to-60-days': '03', 'more-than-60-days': '04',
} as const;

/** EMV threeDSReqAuthMethod (07 and 08 from 2.2.0). */
export const AUTHENTICATION_METHOD_CODES = {
  'no-login': '01', 'username-password': '02', 'federated-id': '03', 'issuer-credentials': '04',
  'third-party': '05', 'fido': '06', 'fido-data-signed': '07', 'src-assurance-data': '08',
} as const;

/** EMV threeDSReqPriorAuthMethod. */
export const PRIOR_AUTHENTICATION_METHOD_CODES = { 'frictionless': '01', 'challenge': '02', 'davs-verified': '03', 'other': '04' } as const;

/** EMV deliveryTimeframe. */
export const DELIVERY_TIME_FRAME_CODES = {
  'electronic-delivery': '01', 'same-day-shipping': '02', 'overnight-shipping': '03', 'two-or-more-day-shipping': '04',
} as const;

/** EMV shipIndicator. */
export const SHIPPING_METHOD_CODES = {
  'ship-to-billing-address': '01', 'ship-to-verified-address': '02', 'ship-to-different-address': '03', 'ship-to-store': '04',
  'digital-goods': '05', 'travel-and-event-tickets': '06', 'other': '07',
} as const;

/** EMV addrMatch. */
export const ADDRESS_MATCH_VALUES = ['Y', 'N'] as const;

/** EMV deviceChannel: what a session's device (or a merchant session, 3RI) sends the AReq as. */
export const DEVICE_CHANNEL_CODES = { mobile: '01', browser: '02', merchant: '03' } as const;

/** The keys of a code table, as an array TypeBox's Enum takes. */
export function wordsOf<T extends Record<string, unknown>>(table: T): (keyof T & string)[] {
  return Object.keys(table) as (keyof T & string)[];
}
