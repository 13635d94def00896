/**
 * What the simulator knows about each card network's Directory Server: its id, the ECI values
 * its issuers give, its reference number, and the EMV 3DS versions in play.
 */
import type { VersionInfo } from './provider.ts';

/**
 * Directory Server ids are the networks' registered application provider ids (RIDs), as 3DS SDKs
 * configure them: Diners runs on Discover's DS, Maestro on Mastercard's. Brands without a DS of
 * their own here get an `F…` id, the range EMV leaves to proprietary (unregistered) use, so it
 * cannot be mistaken for a real network's.
 */
const DS_IDS: Readonly<Record<string, string>> = {
  'visa': 'A000000003',
  'mastercard': 'A000000004',
  'maestro': 'A000000004',
  'american-express': 'A000000025',
  'discover': 'A000000152',
  'diners-club': 'A000000152',
  'jcb': 'A000000065',
  'unionpay': 'A000000333',
};
export const SIMULATOR_DS_ID = 'F000000001';

export function directoryServerId(brand: string): string {
  return DS_IDS[brand] ?? SIMULATOR_DS_ID;
}

/** Mastercard's ECI scale differs from everyone else's (PAYMENTS-FACTS.md §1.6). */
const MASTERCARD_ECI = { Y: '02', A: '01' } as const;
const OTHER_ECI = { Y: '05', A: '06' } as const;

/** The ECI of a Y or A authentication; the ACS gives none for other statuses. */
export function eciFor(brand: string, status: 'Y' | 'A'): string {
  return (brand === 'mastercard' || brand === 'maestro' ? MASTERCARD_ECI : OTHER_ECI)[status];
}

/**
 * Reference numbers are what EMVCo assigns each approved DS and ACS product; the simulated ones
 * follow that `3DS_LOA_<DIS|ACS>_<vendor>_<version>_<serial>` shape under a vendor code that is
 * clearly the simulator's, and stay fixed so clients can recognise simulated results.
 */
const DS_SERIALS: Readonly<Record<string, string>> = {
  A000000003: '00003',
  A000000004: '00004',
  A000000025: '00025',
  A000000152: '00152',
  A000000065: '00065',
  A000000333: '00333',
};
export const SIMULATOR_ACS_REFERENCE_NUMBER = '3DS_LOA_ACS_CFSM_020200_00001';

export function dsReferenceNumber(dsId: string): string {
  return `3DS_LOA_DIS_CFSM_020200_${DS_SERIALS[dsId] ?? '00001'}`;
}

/**
 * The simulated DS speaks 2.1.0 to 2.3.1 and the simulated ACSs 2.1.0 to 2.2.0, so 2.2.0 is the
 * version both sides share last: the one a 3DS Server recommends. 2.2.0 is also the first with
 * decoupled authentication and the informational status.
 */
export const THREEDS_VERSION = '2.2.0';

export function versionInfo(decoupled: boolean): VersionInfo {
  return {
    recommended_version: THREEDS_VERSION,
    available_version: ['2.1.0', '2.2.0'],
    earliest_acs_supported_version: '2.1.0',
    earliest_ds_supported_version: '2.1.0',
    latest_acs_supported_version: '2.2.0',
    latest_ds_supported_version: '2.3.1',
    // EMV acsInfoInd: 01 authentication and 02 attempts everywhere; 03 where the ACS decouples.
    acs_information: decoupled ? ['01', '02', '03'] : ['01', '02'],
  };
}
