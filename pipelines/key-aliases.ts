/**
 * Other names of each job type's key column, as exports from Excel, Google Sheets, Outlook,
 * CRMs and mailing tools write them, in ranked groups (see `Pipeline.keyAliases`). Names are
 * compared normalised, so one entry covers its spellings: `email address` also matches
 * `E-mail Address`, `EMAIL_ADDRESS` and `emailaddress`.
 *
 * The groups are ranked so that a file with several plausible columns still has one answer where
 * a person would see one: the full name of the thing beats a qualified kind of it (`Phone` over
 * `Mobile`, `Company Name` over `Website`). Kinds of one rank (`Work Email` and `Personal Email`,
 * `Mobile` and `Home Phone`) are different values, so two of them make the caller choose rather
 * than letting the engine charge for a guess.
 */

export const EMAIL_ALIASES: readonly (readonly string[])[] = [
  [
    'email address',
    'mail',
    'mail address',
    'email id',
    'e-mail-adresse',
    'email adresse',
    'mailadresse',
    'courriel',
    'adresse email',
    'adresse mail',
    'adresse électronique',
    'correo',
    'correo electrónico',
    'dirección de correo',
    'posta elettronica',
    'indirizzo email',
    'emailadres',
  ],
  ['primary email', 'email 1 value', 'email 1 address'],
  ['work email', 'business email', 'personal email', 'private email', 'home email', 'office email', 'contact email'],
];

export const PHONE_ALIASES: readonly (readonly string[])[] = [
  [
    'phone number',
    'phone no',
    'phone #',
    'telephone',
    'telephone number',
    'tel',
    'tel no',
    'telefon',
    'telefonnummer',
    'téléphone',
    'numéro de téléphone',
    'teléfono',
    'número de teléfono',
    'telefono',
    'numero di telefono',
    'telefoon',
    'telefoonnummer',
  ],
  ['primary phone', 'phone 1 value'],
  [
    'mobile',
    'mobile phone',
    'mobile number',
    'cell',
    'cell phone',
    'cellphone',
    'cell number',
    'handy',
    'handynummer',
    'mobil',
    'mobilnummer',
    'mobiltelefon',
    'portable',
    'móvil',
    'celular',
    'cellulare',
    'whatsapp',
    'work phone',
    'business phone',
    'office phone',
    'home phone',
    'direct phone',
  ],
];

export const COMPANY_ALIASES: readonly (readonly string[])[] = [
  [
    'company name',
    'organization',
    'organisation',
    'organization name',
    'organisation name',
    'account name',
    'employer',
    'business name',
    'firma',
    'firmenname',
    'unternehmen',
    'entreprise',
    'société',
    'empresa',
    'azienda',
    'bedrijf',
    'bedrijfsnaam',
  ],
  ['domain', 'company domain', 'domain name'],
  ['website', 'company website', 'url', 'homepage', 'webseite', 'site web', 'sitio web', 'sito web'],
];
