/**
 * The sandbox account's product catalog and the pools names are drawn from. Plan and component
 * identifiers are fixed, as they are configuration upstream rather than per-customer data.
 * The catalog objects the API serves (Plans, PlanVariants, PlanGroups, Components) are built
 * from these in catalog-objects.ts; prices may change during a scenario, so the current price is
 * the served object's, these are the initial ones.
 */
export interface Plan {
  PlanId: string;
  PlanVariantId: string;
  PlanGroupId: string;
  Name: string;
  /** German name: `Name` is a localizable object upstream. */
  NameDe: string;
  /** Initial net price per billing period (a month, which the sandbox counts as 30 days). */
  Price: number;
  /** Trial length in days offered on signup (0: none). */
  TrialDays: number;
  /** Days before the trial ends that TrialEndApproaching is sent (the per-plan warning time, spec 1). */
  TrialWarningDays: number;
}

export interface Component {
  ComponentId: string;
  Name: string;
  NameDe: string;
  /** Unit of the quantity. */
  Unit: string;
  /** Initial net price per unit and month. */
  PricePerUnit: number;
}

/** The one plan group of the sandbox account: every plan and component belongs to it. */
export const PLAN_GROUP = { PlanGroupId: '5f1a0c3e9b7d4a2e8c6f0a01', Name: 'SaaS subscriptions', NameDe: 'SaaS-Abonnements' } as const;

export const PLANS: readonly Plan[] = [
  { PlanId: '5f1a0c3e9b7d4a2e8c6f0b11', PlanVariantId: '5f1a0c3e9b7d4a2e8c6f0c21', PlanGroupId: PLAN_GROUP.PlanGroupId, Name: 'Starter', NameDe: 'Einstieg', Price: 9, TrialDays: 14, TrialWarningDays: 3 },
  { PlanId: '5f1a0c3e9b7d4a2e8c6f0b12', PlanVariantId: '5f1a0c3e9b7d4a2e8c6f0c22', PlanGroupId: PLAN_GROUP.PlanGroupId, Name: 'Professional', NameDe: 'Professionell', Price: 29, TrialDays: 14, TrialWarningDays: 3 },
  { PlanId: '5f1a0c3e9b7d4a2e8c6f0b13', PlanVariantId: '5f1a0c3e9b7d4a2e8c6f0c23', PlanGroupId: PLAN_GROUP.PlanGroupId, Name: 'Enterprise', NameDe: 'Unternehmen', Price: 99, TrialDays: 30, TrialWarningDays: 7 },
];

export const COMPONENTS: readonly Component[] = [
  { ComponentId: '5f1a0c3e9b7d4a2e8c6f0d31', Name: 'Additional seat', NameDe: 'Zusätzlicher Platz', Unit: 'Seat', PricePerUnit: 5 },
  { ComponentId: '5f1a0c3e9b7d4a2e8c6f0d32', Name: 'Storage 100 GB', NameDe: 'Speicher 100 GB', Unit: 'Storage', PricePerUnit: 3.5 },
];

export const CURRENCIES = ['EUR', 'EUR', 'EUR', 'CHF', 'USD'] as const;

export const VAT_RATE = 0.19;

export const FIRST_NAMES = ['Anna', 'Ben', 'Clara', 'David', 'Elif', 'Finn', 'Greta', 'Hugo', 'Ida', 'Jonas', 'Lea', 'Mats'] as const;
export const LAST_NAMES = ['Becker', 'Fischer', 'Hoffmann', 'Keller', 'Lang', 'Meyer', 'Novak', 'Schulz', 'Vogel', 'Weber'] as const;
export const COMPANIES = ['Acme Analytics GmbH', 'Blue Finch Ltd', 'Cobalt Labs AG', 'Delta Foods KG', 'Evergreen Studio', 'Fjord Logistics AS'] as const;
export const CITIES = [
  { City: 'Berlin', PostalCode: '10115', Country: 'DE' },
  { City: 'München', PostalCode: '80331', Country: 'DE' },
  { City: 'Zürich', PostalCode: '8001', Country: 'CH' },
  { City: 'Wien', PostalCode: '1010', Country: 'AT' },
  { City: 'Hamburg', PostalCode: '20095', Country: 'DE' },
] as const;
export const STREETS = ['Hauptstraße', 'Bahnhofstraße', 'Lindenweg', 'Marktplatz', 'Seestraße'] as const;
