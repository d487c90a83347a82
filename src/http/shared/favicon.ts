/** A blue tile with a white stack: the service's mark, served by the asset browser and the GraphQL IDE. */
export const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0b57d0"/>' +
  '<path d="M16 6l10 5-10 5-10-5z" fill="#fff"/><path d="M6 16l10 5 10-5M6 21l10 5 10-5" fill="none" stroke="#fff" ' +
  'stroke-width="2" stroke-linejoin="round"/></svg>\n';
