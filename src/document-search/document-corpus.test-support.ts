/**
 * Test data for the document search: a small store of five files (a router manual, an HR handbook, an IT security
 * policy, recipes and office guides) cut into passages, questions a user would ask of it with the passage that
 * answers each, and a stand-in for an embedding model.
 */
import type { Attributes } from './attribute-filter.ts';
import type { IndexedChunk } from './hybrid-index.ts';

interface CorpusFile {
  fileId: string;
  filename: string;
  attributes: Attributes;
  /** Passages by chunk id. */
  passages: Record<string, string>;
}

export const CORPUS_FILES: CorpusFile[] = [
  {
    fileId: 'file-router',
    filename: 'xr-series-router-manual.pdf',
    attributes: { department: 'support', year: 2024, public: true, updated: '2024-03-18' },
    passages: {
      'router-models':
        'The XR series comes in three models. The XR-7734 is the tri-band flagship with a 2.5 gigabit WAN port, the ' +
        'XR-7735 is the dual-band model for apartments, and the XR-7736 adds a built-in 5G modem for mobile backup.',
      'router-range-7734':
        'Coverage of the XR-7734: up to 280 square metres through two interior walls, thanks to eight internal ' +
        'antennas and beamforming. Place it high and central for the best signal.',
      'router-range-7735':
        'Coverage of the XR-7735: up to 150 square metres through two interior walls, with four internal antennas. ' +
        'Place it high and central for the best signal.',
      'router-range-7736':
        'Coverage of the XR-7736: up to 200 square metres through two interior walls, with six internal antennas. ' +
        'Place it high and central for the best signal.',
      'router-placement':
        'For the best Wi-Fi coverage, keep the router away from microwaves, fish tanks and metal cabinets, which ' +
        'block the signal. Coverage drops by roughly a third with every concrete wall in the way.',
      'router-mesh':
        'To extend coverage to a garden or an upper floor, add a mesh satellite. Satellites join the router’s ' +
        'network automatically and hand your devices over to whichever has the strongest signal.',
      'router-setup':
        'To set up the router, connect the WAN port to your modem with the supplied Ethernet cable, power it on and ' +
        'wait two minutes. Then open the Lumen Home app on your phone and scan the QR code on the bottom label.',
      'router-reset':
        'To restore factory settings, hold the recessed reset button on the back for ten seconds with a paperclip ' +
        'until the status light flashes white. All your settings, including the Wi-Fi password, will be erased.',
      'router-lights':
        'Status light colours: solid white means connected to the internet; pulsing blue means starting up; flashing ' +
        'amber means the router has no internet connection; solid red means a hardware fault, contact support.',
      'router-firmware':
        'Firmware updates install automatically between 2 and 4 a.m. To update manually, open the app, go to ' +
        'Settings, then System, then Check for updates. Do not unplug the router while an update is installing.',
      'router-error-e42':
        'Error code E42 means the router cannot obtain an IP address from your internet provider. Restart the modem ' +
        'first, then the router. If E42 persists, your provider may require PPPoE credentials, entered under WAN.',
      'router-guest':
        'A guest network gives visitors internet access without reaching your own devices. Enable it in the app ' +
        'under Wi-Fi, then Guest network, and choose whether it expires after a day or a week.',
      'router-parental':
        'Parental controls let you pause internet access for a child’s devices, set bedtime schedules and block ' +
        'adult content categories. Create a profile for each child and assign their phones and tablets to it.',
      'router-warranty':
        'Every XR router carries a two-year limited warranty from the date of purchase. Keep your receipt. The ' +
        'warranty does not cover damage from lightning strikes, liquids or opening the case.',
    },
  },
  {
    fileId: 'file-handbook',
    filename: 'employee-handbook-2024.pdf',
    attributes: { department: 'hr', year: 2024, public: false, updated: '2024-01-09', region: 'eu' },
    passages: {
      'hr-annual-leave':
        'Full-time staff receive 25 days of paid vacation each calendar year, plus public holidays. Up to five unused ' +
        'days may be carried over into the first quarter of the following year.',
      'hr-sick-leave':
        'If you are ill, tell your manager before 10 a.m. on the first day of absence. From the fourth consecutive ' +
        'day of sickness a doctor’s certificate is required.',
      'hr-parental-leave':
        'Parents are entitled to 20 weeks of paid parental leave after the birth or adoption of a child, which can be ' +
        'taken in up to three blocks before the child turns two.',
      'hr-remote-work':
        'Employees may work remotely up to three days per week with their manager’s agreement. Tuesdays are team ' +
        'days, when everyone is expected at the office.',
      'hr-expenses':
        'Claim business expenses with form HR-12 within 30 days, attaching itemised receipts. Meals while ' +
        'travelling are reimbursed up to 60 euros per day.',
      'hr-probation':
        'New hires serve a probationary period of six months. During probation either side may end the contract ' +
        'with two weeks’ notice; afterwards the notice period is three months.',
      'hr-reviews':
        'Performance reviews happen twice a year, in March and September. Your manager will discuss goals, ' +
        'feedback from colleagues and your development plan.',
      'hr-training':
        'Each employee has a training budget of 1,500 euros per year for courses, conferences and books related to ' +
        'their role. Unused budget does not carry over.',
      'hr-conduct':
        'Harassment, discrimination and bullying are not tolerated. Report concerns to your manager, to HR or in ' +
        'confidence to the ombudsperson, Dr. Adaeze Okonkwo.',
      'hr-equipment':
        'New starters receive a laptop, a monitor and a headset. Equipment remains company property and must be ' +
        'returned on your last working day.',
    },
  },
  {
    fileId: 'file-security',
    filename: 'it-security-policy.md',
    attributes: { department: 'it', year: 2023, public: false, updated: '2023-11-30', region: 'us' },
    passages: {
      'it-passwords':
        'Passwords must be at least 14 characters long and must not be reused across services. Use the company ' +
        'password manager, Keyward, to generate and store them.',
      'it-mfa':
        'Multi-factor authentication is mandatory for email, the VPN and every cloud service. Use the authenticator ' +
        'app or a hardware security key; text message codes are not accepted.',
      'it-phishing':
        'If a message asks for your credentials, urges you to act immediately or has an unexpected attachment, do ' +
        'not click anything. Forward the suspicious email to phish@example.com and delete it.',
      'it-vpn':
        'Connect through the corporate VPN whenever you use public Wi-Fi in cafés, hotels or airports. The VPN ' +
        'client starts automatically when you log in.',
      'it-encryption':
        'All laptops must use full-disk encryption. Lost or stolen devices must be reported to the service desk ' +
        'within one hour so that they can be wiped remotely.',
      'it-incidents':
        'Report any security incident, such as malware, a data leak or a lost badge, to the service desk on ' +
        'extension 4400, day or night.',
      'it-software':
        'Only install software from the company portal. Browser extensions need approval from the security team ' +
        'because they can read everything on the pages you visit.',
      'it-classification':
        'Data is classified as public, internal, confidential or restricted. Restricted data, such as customer ' +
        'payment details, must never leave the production environment.',
    },
  },
  {
    fileId: 'file-recipes',
    filename: 'team-cookbook.md',
    attributes: { department: 'kitchen', year: 2022, public: true, updated: '2022-06-01' },
    passages: {
      'recipe-sourdough':
        'Sourdough bread: mix 500 g of strong flour with 350 g of water and 100 g of active starter, rest for an ' +
        'hour, add 10 g of salt, fold every half hour, shape and prove overnight in the fridge. Bake at 250 °C in a ' +
        'covered pot.',
      'recipe-ratatouille':
        'Ratatouille: slice aubergine, courgette, peppers and onions, fry each separately in olive oil, then simmer ' +
        'together with tomatoes, garlic and thyme for forty minutes. Vegan and even better the next day.',
      'recipe-creme-brulee':
        'Crème brûlée: whisk six egg yolks with 80 g of sugar, stir in 500 ml of warm cream and vanilla, bake in a ' +
        'water bath at 150 °C until just set, chill, then caramelise a layer of sugar on top with a blowtorch.',
      'recipe-pad-thai':
        'Pad thai: soak rice noodles, stir-fry with garlic, tofu and egg, then add tamarind paste, fish sauce and ' +
        'palm sugar. Finish with bean sprouts, crushed peanuts and lime.',
      'recipe-bechamel':
        'Béchamel sauce: melt 50 g of butter, whisk in 50 g of flour, cook for two minutes, then add 500 ml of milk ' +
        'a little at a time, stirring until thick. Season with nutmeg.',
      'recipe-risotto':
        'Mushroom risotto: toast arborio rice in butter, add a glass of white wine, then hot stock one ladle at a ' +
        'time for eighteen minutes. Stir in porcini and parmesan at the end.',
      'recipe-pancakes':
        'Pancakes: whisk 200 g of flour, two eggs, 300 ml of milk and a pinch of salt into a smooth batter and rest ' +
        'it for thirty minutes. Cook thin layers in a hot buttered pan.',
      'recipe-gazpacho':
        'Gazpacho is a cold soup: blend ripe tomatoes, cucumber, green pepper, garlic, olive oil and sherry vinegar, ' +
        'then chill for at least two hours. Serve on hot summer days.',
    },
  },
  {
    fileId: 'file-offices',
    filename: 'office-guides.md',
    attributes: { department: 'facilities', year: 2024, public: true, updated: '2024-05-02', region: 'eu' },
    passages: {
      'office-malmo':
        'The Malmö office is a ten-minute walk from the central station, on the fourth floor of Stortorget 7. ' +
        'Visitors sign in at reception with a photo ID.',
      'office-munich':
        'The Munich office is at Leopoldstraße 42. Take the U6 to Giselastraße; the entrance is in the courtyard ' +
        'behind the bakery.',
      'office-sao-paulo':
        'The São Paulo office is on Avenida Paulista near MASP. Lunch is catered on Thursdays and there is secure ' +
        'bicycle parking in the basement.',
      'office-parking':
        'Car parking at all offices is limited. Book a space the day before in the facilities app; charging points ' +
        'for electric cars are free for staff.',
      'office-first-aid':
        'First aid kits and defibrillators are next to every kitchen. The trained first aiders on each floor are ' +
        'listed on the noticeboard by the lifts.',
    },
  },
];

/** Every passage as a chunk, with its vector from {@link embed}. */
export function corpusChunks(): IndexedChunk[] {
  return CORPUS_FILES.flatMap((file) =>
    Object.entries(file.passages).map(([id, text]) => ({
      id,
      fileId: file.fileId,
      filename: file.filename,
      text,
      attributes: { ...file.attributes },
      vectors: [embed(text)],
    })),
  );
}

/** A question and the passage that answers it. */
export interface Question {
  query: string;
  answer: string;
  /**
   * Whether it names the passage's exact words (a code, a name), says what it means in other words, or names its
   * words misspelt or in another form ("encrypt" for "encryption").
   */
  kind: 'keyword' | 'paraphrase' | 'misspelt';
}

export const QUESTIONS: Question[] = [
  { query: 'XR-7734 coverage', answer: 'router-range-7734', kind: 'keyword' },
  { query: 'What does error E42 mean?', answer: 'router-error-e42', kind: 'keyword' },
  { query: 'Who is Dr. Okonkwo?', answer: 'hr-conduct', kind: 'keyword' },
  { query: 'form HR-12', answer: 'hr-expenses', kind: 'keyword' },
  { query: 'creme brulee', answer: 'recipe-creme-brulee', kind: 'keyword' },
  { query: 'Malmo office address', answer: 'office-malmo', kind: 'keyword' },
  { query: 'Leopoldstrasse', answer: 'office-munich', kind: 'keyword' },
  { query: 'Keyward password manager', answer: 'it-passwords', kind: 'keyword' },
  { query: 'extension 4400', answer: 'it-incidents', kind: 'keyword' },
  { query: 'Lumen Home app', answer: 'router-setup', kind: 'keyword' },
  { query: 'PPPoE credentials', answer: 'router-error-e42', kind: 'keyword' },
  { query: 'which model has a built-in 5G modem', answer: 'router-models', kind: 'keyword' },
  { query: 'How many holiday days do I get per year?', answer: 'hr-annual-leave', kind: 'paraphrase' },
  { query: 'Can I work from home?', answer: 'hr-remote-work', kind: 'paraphrase' },
  { query: 'I got a dodgy email asking for my login, what should I do?', answer: 'it-phishing', kind: 'paraphrase' },
  { query: 'the lights on my router are blinking orange', answer: 'router-lights', kind: 'paraphrase' },
  { query: 'how long is the trial period for new employees', answer: 'hr-probation', kind: 'paraphrase' },
  { query: 'vegetable stew with eggplant and zucchini', answer: 'recipe-ratatouille', kind: 'paraphrase' },
  { query: 'how do I wipe all settings and start over', answer: 'router-reset', kind: 'paraphrase' },
  { query: 'my laptop was stolen', answer: 'it-encryption', kind: 'paraphrase' },
  { query: 'refund for meals on a business trip', answer: 'hr-expenses', kind: 'paraphrase' },
  { query: 'time off after having a baby', answer: 'hr-parental-leave', kind: 'paraphrase' },
  { query: 'chilled tomato soup', answer: 'recipe-gazpacho', kind: 'paraphrase' },
  { query: 'white sauce made with milk and butter', answer: 'recipe-bechamel', kind: 'paraphrase' },
  { query: 'where can I leave my bike in Brazil', answer: 'office-sao-paulo', kind: 'paraphrase' },
  { query: 'is texting a code enough for two-step login', answer: 'it-mfa', kind: 'paraphrase' },
  { query: 'keep kids off the internet at night', answer: 'router-parental', kind: 'paraphrase' },
  { query: 'let visitors use the wifi without seeing my computers', answer: 'router-guest', kind: 'paraphrase' },
  { query: 'courses and conferences allowance', answer: 'hr-training', kind: 'paraphrase' },
  { query: 'what happens if lightning damages my router', answer: 'router-warranty', kind: 'paraphrase' },
  { query: 'pasword manger', answer: 'it-passwords', kind: 'misspelt' },
  { query: 'ratatouile', answer: 'recipe-ratatouille', kind: 'misspelt' },
  { query: 'where is the nearest defibrilator', answer: 'office-first-aid', kind: 'misspelt' },
  { query: 'reporting harrassment', answer: 'hr-conduct', kind: 'misspelt' },
  { query: 'which disks must I encrypt', answer: 'it-encryption', kind: 'misspelt' },
  { query: 'how many antenas does the XR-7734 have', answer: 'router-range-7734', kind: 'misspelt' },
];

/**
 * Words a small sentence-embedding model would place close together, as one concept each: the stand-in for meaning
 * that {@link embed} has and bag-of-words search lacks.
 */
const CONCEPTS: string[][] = [
  ['vacation', 'holiday', 'holidays', 'leave', 'time', 'off'],
  ['remote', 'remotely', 'home'],
  ['email', 'message', 'mail'],
  ['suspicious', 'dodgy', 'phish', 'phishing', 'unexpected'],
  ['credentials', 'login', 'password', 'passwords'],
  ['amber', 'orange'],
  ['flashing', 'blinking', 'pulsing'],
  ['light', 'lights', 'led'],
  ['probation', 'probationary', 'trial'],
  ['hires', 'employees', 'employee', 'staff', 'starters'],
  ['aubergine', 'eggplant'],
  ['courgette', 'zucchini'],
  ['ratatouille', 'stew'],
  ['vegan', 'vegetable', 'vegetarian'],
  ['factory', 'restore', 'reset', 'wipe', 'wiped', 'erase', 'erased', 'over'],
  ['settings', 'configuration'],
  ['stolen', 'lost', 'theft'],
  ['expenses', 'refund', 'reimbursed', 'claim'],
  ['meals', 'meal', 'lunch', 'food'],
  ['business', 'trip', 'travelling', 'travel'],
  ['parental', 'parents', 'baby', 'birth', 'adoption'],
  ['cold', 'chilled', 'chill'],
  ['soup', 'gazpacho'],
  ['sauce', 'bechamel'],
  ['bicycle', 'bike', 'cycling'],
  ['brazil', 'sao', 'paulo'],
  ['multi', 'factor', 'two', 'step', 'authentication', 'authenticator'],
  ['text', 'texting', 'sms'],
  ['child', 'children', 'kids', 'kid'],
  ['bedtime', 'night', 'schedules'],
  ['guest', 'visitors', 'visitor'],
  ['wifi', 'wi', 'fi', 'wireless'],
  ['devices', 'computers', 'phones', 'tablets'],
  ['training', 'courses', 'conferences', 'allowance', 'budget'],
  ['lightning', 'storm'],
  ['damage', 'damages', 'broken'],
  ['warranty', 'guarantee'],
  ['coverage', 'range', 'signal'],
];
const CONCEPT_OF = new Map(CONCEPTS.flatMap((words, i) => words.map((word) => [word, `concept${i}`] as const)));
const FUNCTION_WORDS = new Set(
  'a an the of to in on for and or is are do does i my me what how can with at by it be as if your you from'.split(' '),
);

/** Dimensions of {@link embed}'s vectors. */
export const EMBEDDING_DIMENSIONS = 256;

/**
 * A stand-in for an embedding model, for tests only: words are lower-cased and mapped to a concept when they have
 * one, then hashed into {@link EMBEDDING_DIMENSIONS} signed buckets, over a component all texts share; the vector is left unnormalised, as the index
 * must not trust that callers normalise. Like a small embedding model, it sees meaning across synonyms ("holiday"
 * and "vacation" are one) but is blind to codes and numbers: a term with a digit adds nothing, so "XR-7734" and
 * "XR-7735" embed alike.
 */
export function embed(text: string): Float32Array {
  const vector = new Float32Array(EMBEDDING_DIMENSIONS);
  const words = text
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .split(/[^a-z0-9]+/);
  // Every text shares one component, as real embeddings share a common direction (unrelated texts score above 0).
  vector[0] = 4;
  for (const word of words) {
    if (word === '' || FUNCTION_WORDS.has(word) || /\d/.test(word)) continue;
    const feature = CONCEPT_OF.get(word) ?? word.replace(/s$/, '');
    const hash = fnv1a(feature);
    vector[hash % EMBEDDING_DIMENSIONS]! += hash & 0x80000000 ? -3 : 3;
  }
  return vector;
}

/** FNV-1a, 32 bits. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
