// Types of sourcesHash.js, for the TypeScript that imports it (tests).
export declare const REPO: string;
export declare const DIST: string;
export declare const STAMP: string;
export declare function sourcesHash(repo?: string): string;
export declare function distIsCurrent(repo?: string): boolean;
